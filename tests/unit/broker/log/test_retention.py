"""Retention: the pure decision and deleting old segments from a log; the flush policy."""

from __future__ import annotations

from replog.broker.log.flush_policy import FlushPolicy
from replog.broker.log.retention import SegmentSummary, count_deletable_segments

T0_MS = 1_700_000_000_000


def summaries(*max_timestamps_ms, size_bytes=100):
    return [SegmentSummary((i + 1) * 10, size_bytes, ts) for i, ts in enumerate(max_timestamps_ms)]


def test_by_time_deletes_a_prefix_of_expired_segments_never_the_active_one():
    segments = summaries(0, 10, 50, 20, 0)
    count = lambda now_ms: count_deletable_segments(  # noqa: E731
        segments, now_ms=now_ms, retention_ms=30, retention_bytes=None
    )
    assert count(30) == 0
    assert count(45) == 2  # 0 and 10 are over 30 ms old; 50 is not, so 20 stays too
    assert count(1000) == 4  # the active segment always stays


def test_by_size_keeps_at_least_retention_bytes():
    segments = summaries(0, 0, 0, 0, size_bytes=100)
    assert count_deletable_segments(segments, now_ms=0, retention_ms=None, retention_bytes=250) == 1
    assert count_deletable_segments(segments, now_ms=0, retention_ms=None, retention_bytes=200) == 2
    assert count_deletable_segments(segments, now_ms=0, retention_ms=None, retention_bytes=1) == 3


def test_upper_offset_protects_segments_not_wholly_below_it():
    segments = summaries(0, 0, 0, 0)  # next offsets 10, 20, 30, 40
    kwargs = dict(now_ms=10**6, retention_ms=1, retention_bytes=None)
    assert count_deletable_segments(segments, upper_offset=19, **kwargs) == 1
    assert count_deletable_segments(segments, upper_offset=20, **kwargs) == 2


def test_log_retention_deletes_old_segments_and_moves_the_start(logs):
    log = logs.open(segment_bytes=1000, retention_ms=60_000)
    for i in range(40):
        log.append_as_leader(logs.batch(2, timestamp_ms=T0_MS + i * 10_000), leader_epoch=1 if i < 5 else 2)
    segment_count = log.segment_count
    assert log.delete_old_segments(T0_MS) == []
    deleted = log.delete_old_segments(T0_MS + 400_000)
    assert deleted and log.segment_count == segment_count - len(deleted)
    assert not any((logs.directory / name).exists() for name in deleted)
    assert log.log_start_offset == int(sorted(p.name for p in logs.directory.glob("*.log"))[0][:20])
    assert log.epoch_entries()[0] == (2, log.log_start_offset)
    assert log.read(log.log_start_offset, 1) != b""
    assert log.delete_old_segments(T0_MS + 10**9) and log.segment_count == 1  # the active one stays
    assert log.log_end_offset == 80


def test_log_retention_by_bytes_and_below_the_high_watermark(logs):
    log = logs.open(segment_bytes=1000, retention_bytes=2000)
    for _ in range(40):
        log.append_as_leader(logs.batch(2), leader_epoch=0)
    assert log.delete_old_segments(T0_MS, upper_offset=0) == []
    log.delete_old_segments(T0_MS)
    assert 2000 <= log.size_bytes < 3000


def test_flush_policy():
    policy = FlushPolicy(flush_messages=3, flush_interval_ms=100, now_ms=0)
    assert not policy.is_due(1000)  # nothing to flush
    policy.on_append(2)
    assert not policy.is_due(99) and policy.is_due(100)
    policy.on_append(1)
    assert policy.is_due(0)
    policy.on_flush(now_ms=150)
    assert policy.unflushed_records == 0 and not policy.is_due(151)
    assert not FlushPolicy(None, None, 0).is_due(10**9)
