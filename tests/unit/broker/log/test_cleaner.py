"""The log cleaner on real on-disk logs: latest value per key, tombstones, offsets kept with gaps, reads
and follower appends across the gaps, producer state kept, and a crash at every step of the swap."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from replog.broker.log import LogConfig, PartitionLog
from replog.broker.log.cleaner import Throttle, clean_log
from replog.broker.log.compaction import KeyOffsets, cleanable_prefix, dirty_ratio, is_due, kept_runs
from replog.broker.log.compaction import CleanableSegment
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.common.clock import ManualClock
from replog.common.records import decode_records, encode_batch

T0_MS = 1_700_000_000_000
DAY_MS = 24 * 3600 * 1000


def compacted(**overrides) -> LogConfig:
    settings = dict(segment_bytes=2048, cleanup_policy="compact", delete_retention_ms=DAY_MS,
                    min_cleanable_dirty_ratio=0.0)
    settings.update(overrides)
    return LogConfig(**settings)


def open_log(directory: Path, config: LogConfig | None = None, recovery_point: int | None = None) -> PartitionLog:
    return PartitionLog.open(directory, config or compacted(), ManualClock(T0_MS), recovery_point=recovery_point)


def run_pass(log: PartitionLog, *, now_ms: int = T0_MS, keys_max: int = 100_000, first_dirty_offset: int = 0,
             throttle: Throttle | None = None):
    return clean_log(log, lambda step: step(), upper_offset=lambda: log.log_end_offset, now_ms=now_ms,
                     keys_max=keys_max, throttle=throttle or Throttle(0, lambda: 0.0, lambda s: None),
                     first_dirty_offset=first_dirty_offset)


def write_history(log: PartitionLog, writes: list[tuple[bytes, bytes | None]], *, per_batch: int = 3,
                  timestamp_ms: int = T0_MS, **producer) -> None:
    for start in range(0, len(writes), per_batch):
        chunk = writes[start:start + per_batch]
        log.append_as_leader(encode_batch([(k, v, timestamp_ms) for k, v in chunk], **producer), leader_epoch=0)


def all_records(log: PartitionLog) -> list:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:  # the log ends in a gap (after a truncation into one)
            break
        records = decode_records(data, start_offset=offset)
        assert records, f"no record read from {offset}"
        out += records
        offset = records[-1].offset + 1
    return out


def random_history(seed: int, writes: int = 600, keys: int = 40, tombstone_share: float = 0.1):
    rng = random.Random(seed)
    history = []
    for i in range(writes):
        key = b"key-%03d" % rng.randrange(keys)
        history.append((key, None if rng.random() < tombstone_share else b"value-%05d" % i))
    return history


def latest_by_key(history, count: int | None = None) -> dict[bytes, tuple[int, bytes | None]]:
    latest = {}
    for offset, (key, value) in enumerate(history[:count]):
        latest[key] = (offset, value)
    return latest


def test_a_pass_keeps_exactly_the_latest_record_of_each_key_in_the_rolled_segments(tmp_path):
    history = random_history(seed=1)
    log = open_log(tmp_path / "t-0")
    write_history(log, history)
    assert log.segment_count > 5
    active_base = log.cleanable_segments()[-1].next_offset
    result = run_pass(log)
    assert result.segments_rewritten > 0 and result.records_removed > 0
    records = all_records(log)
    cleaned = [r for r in records if r.offset < active_base]
    latest = latest_by_key(history, active_base)
    # every record below the active segment is its key's latest there, with its original offset and value
    assert {(r.key, r.offset, r.value) for r in cleaned} == {
        (key, offset, value) for key, (offset, value) in latest.items()}
    assert [r.offset for r in records] == sorted(r.offset for r in records)
    assert [(r.key, r.value) for r in records if r.offset >= active_base] == history[active_base:]
    assert not log.verify()
    log.close()
    reopened = open_log(tmp_path / "t-0")  # indexes and segments as they were swapped in
    assert [(r.offset, r.key, r.value) for r in all_records(reopened)] == [(r.offset, r.key, r.value) for r in records]


def test_tombstones_go_only_after_delete_retention(tmp_path):
    history = [(b"a", b"1"), (b"b", b"1"), (b"a", None)] + [(b"c%d" % i, b"x" * 100) for i in range(60)]
    log = open_log(tmp_path / "t-0", compacted(delete_retention_ms=1000))
    write_history(log, history)
    first = run_pass(log, now_ms=T0_MS + 500)
    kept = {(r.key, r.value) for r in all_records(log)}
    assert (b"a", None) in kept and (b"a", b"1") not in kept
    assert first.oldest_tombstone_ms == T0_MS
    # nothing dirty is left: the next pass goes over the clean part only, and removes the expired tombstone
    second = run_pass(log, now_ms=T0_MS + 1001, first_dirty_offset=first.first_dirty_offset)
    assert second.records_removed == 1 and second.oldest_tombstone_ms is None
    keys = [r.key for r in all_records(log)]
    assert b"a" not in keys and b"b" in keys


def test_reads_across_gaps_from_every_offset(tmp_path):
    history = random_history(seed=2, writes=300, keys=10)
    log = open_log(tmp_path / "t-0")
    write_history(log, history, per_batch=1)
    run_pass(log)
    offsets = [r.offset for r in all_records(log)]
    for start in range(0, log.log_end_offset):
        first = decode_records(log.read(start, 1), start_offset=start)[0].offset
        assert first == min(o for o in offsets if o >= start)


def test_a_follower_appends_a_cleaned_leader_log_with_its_gaps(tmp_path):
    history = random_history(seed=3, writes=300, keys=10)
    leader = open_log(tmp_path / "leader")
    write_history(leader, history)
    run_pass(leader)
    follower = open_log(tmp_path / "follower")
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 700))
    assert [(r.offset, r.value) for r in all_records(follower)] == [(r.offset, r.value) for r in all_records(leader)]
    assert not follower.verify()
    follower.close()
    assert open_log(tmp_path / "follower").log_end_offset == leader.log_end_offset


@pytest.mark.parametrize("index_lost", [False, True])
def test_a_cleaned_log_reopens_with_the_broker_default_policy(tmp_path, index_lost):
    """At start-up a broker opens its logs before the topics' configs arrive: with its default policy
    (delete). An unclean start scans every segment from the recovery point, and rebuilds a lost index."""
    history = random_history(seed=6, writes=300, keys=10)
    log = open_log(tmp_path / "t-0")
    write_history(log, history)
    run_pass(log)
    expected = [(r.offset, r.key, r.value) for r in all_records(log)]
    log.close()
    if index_lost:
        for index in (tmp_path / "t-0").glob("*.index"):
            index.unlink()
    reopened = open_log(tmp_path / "t-0", LogConfig(segment_bytes=2048), recovery_point=0)
    assert reopened.recovery_report.clean, reopened.recovery_report
    assert [(r.offset, r.key, r.value) for r in all_records(reopened)] == expected
    assert not reopened.verify()


def test_a_log_switched_from_compact_to_delete_still_reads_and_replicates_its_gaps(tmp_path):
    history = random_history(seed=7, writes=300, keys=10)
    leader = open_log(tmp_path / "leader")
    write_history(leader, history)
    run_pass(leader)
    delete_policy = LogConfig(segment_bytes=2048)
    leader.update_config(delete_policy)
    write_history(leader, [(b"after", b"switch")])
    expected = [(r.offset, r.key, r.value) for r in all_records(leader)]
    leader.close()
    leader = open_log(tmp_path / "leader", delete_policy, recovery_point=0)
    assert leader.recovery_report.clean and not leader.verify()
    assert [(r.offset, r.key, r.value) for r in all_records(leader)] == expected
    follower = open_log(tmp_path / "follower", delete_policy)  # a new replica, with the topic's config now
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 700))
    follower.close()
    follower = open_log(tmp_path / "follower", delete_policy, recovery_point=0)
    assert [(r.offset, r.key, r.value) for r in all_records(follower)] == expected
    assert not follower.verify()


def test_a_compact_policy_log_never_cleaned_still_reports_a_damaged_base_offset(tmp_path):
    """Gaps are allowed once the log was compacted, not because its policy says it may be."""
    log = open_log(tmp_path / "t-0")
    write_history(log, random_history(seed=8, writes=30, keys=10), per_batch=1)
    log.close()
    path = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    second_batch = 12 + int.from_bytes(data[8:12], "big")
    data[second_batch + 7] += 3  # the second batch's base offset (outside the CRC) moves up by 3
    path.write_bytes(bytes(data))
    reopened = open_log(tmp_path / "t-0", recovery_point=0)
    assert reopened.recovery_report.bytes_dropped > 0 and reopened.log_end_offset == 1


def test_two_producers_over_the_same_keys_leave_exactly_the_latest_value_and_their_sequences(tmp_path):
    """Each producer's latest batch loses its superseded records like any other: an empty batch keeps its
    last offset and sequence (Kafka's), so the producer state rebuilt from the cleaned log is as before."""
    log = open_log(tmp_path / "t-0")
    for round_ in range(3):
        for producer_id in (7, 8):
            write_history(log, [(b"k%d" % i, b"p%d-r%d" % (producer_id, round_)) for i in range(3)],
                          producer_id=producer_id, producer_epoch=0, base_sequence=3 * round_)
    write_history(log, [(b"k%d" % i, b"plain") for i in range(3)])  # no producer id: supersedes both
    write_history(log, [(b"pad-%d" % i, b"x" * 200) for i in range(30)])
    before = rebuild_from_log(log)
    run_pass(log)
    records = all_records(log)
    assert [(r.key, r.value) for r in records if r.key.startswith(b"k")] == [(b"k0", b"plain"), (b"k1", b"plain"),
                                                                               (b"k2", b"plain")]
    empty = [(h.producer_id, h.base_offset, h.last_offset, h.base_sequence) for h in log.iter_batch_headers()
             if h.record_count == 0]
    assert empty == [(7, 12, 14, 6), (8, 15, 17, 6)]
    after = rebuild_from_log(log)
    for producer_id in (7, 8):
        assert after.batches(producer_id)[-1] == before.batches(producer_id)[-1]
        assert after.batches(producer_id)[-1].last_sequence == 8
    assert not log.verify()
    log.close()
    reopened = open_log(tmp_path / "t-0", LogConfig(segment_bytes=2048), recovery_point=0)
    assert reopened.recovery_report.clean and not reopened.verify()
    assert [(r.offset, r.value) for r in all_records(reopened)] == [(r.offset, r.value) for r in records]
    assert rebuild_from_log(reopened).batches(8)[-1] == before.batches(8)[-1]


def test_a_tombstone_that_is_its_producers_last_record_goes_after_delete_retention(tmp_path):
    log = open_log(tmp_path / "t-0", compacted(delete_retention_ms=1000))
    write_history(log, [(b"a", b"1")])
    write_history(log, [(b"a", None)], producer_id=9, producer_epoch=0, base_sequence=0)
    write_history(log, [(b"pad-%d" % i, b"x" * 200) for i in range(30)])
    first = run_pass(log, now_ms=T0_MS + 500)
    assert [(r.key, r.value) for r in all_records(log) if r.key == b"a"] == [(b"a", None)]
    run_pass(log, now_ms=T0_MS + 1001, first_dirty_offset=first.first_dirty_offset)
    assert [r for r in all_records(log) if r.key == b"a"] == []
    assert [(h.base_offset, h.record_count, h.base_sequence) for h in log.iter_batch_headers()
            if h.producer_id == 9] == [(1, 0, 0)]
    assert rebuild_from_log(log).batches(9)[-1].last_offset == 1
    # a later batch of the producer makes the empty one useless: the next pass removes it
    write_history(log, [(b"b", b"2")], producer_id=9, producer_epoch=0, base_sequence=1)
    write_history(log, [(b"pad2-%d" % i, b"x" * 200) for i in range(30)])
    run_pass(log, now_ms=T0_MS + 2000)
    assert [h.record_count for h in log.iter_batch_headers() if h.producer_id == 9] == [1]
    assert not log.verify()


def test_a_split_batch_keeps_each_records_sequence(tmp_path):
    log = open_log(tmp_path / "t-0")
    write_history(log, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"d", b"1")], per_batch=4,
                  producer_id=7, producer_epoch=2, base_sequence=10)
    write_history(log, [(b"b", b"2")], per_batch=1, producer_id=7, producer_epoch=2, base_sequence=14)
    write_history(log, [(b"pad-%d" % i, b"x" * 300) for i in range(20)])
    run_pass(log)
    first = [h for h in log.iter_batch_headers() if h.producer_id == 7][:2]
    assert [(h.base_offset, h.record_count, h.base_sequence, h.producer_epoch) for h in first] == [
        (0, 1, 10, 2), (2, 2, 12, 2)]


def test_min_compaction_lag_and_the_upper_offset_leave_young_segments_alone(tmp_path):
    log = open_log(tmp_path / "t-0", compacted(min_compaction_lag_ms=10_000))
    history = [(b"k", b"%d" % i) for i in range(200)]
    write_history(log, history)
    assert run_pass(log, now_ms=T0_MS + 5_000).segments_rewritten == 0
    assert len(all_records(log)) == 200
    assert run_pass(log, now_ms=T0_MS + 10_000).segments_rewritten > 0
    assert len(all_records(log)) < 200


def test_a_bounded_key_map_cleans_over_several_passes(tmp_path):
    history = [(b"k%04d" % i, b"x" * 40) for i in range(400)] * 2
    log = open_log(tmp_path / "t-0")
    write_history(log, history)
    first = run_pass(log, keys_max=50)
    assert 0 < first.first_dirty_offset < log.log_end_offset
    dirty_from = first.first_dirty_offset
    passes = 1
    while dirty_from < log.cleanable_segments()[-1].next_offset and passes < 100:
        dirty_from = run_pass(log, keys_max=50, first_dirty_offset=dirty_from).first_dirty_offset
        passes += 1
    assert passes > 2
    active_base = log.cleanable_segments()[-1].next_offset
    run_pass(log, keys_max=100_000)
    records = [r for r in all_records(log) if r.offset < active_base]
    assert len({r.key for r in records}) == len(records)


def test_the_throttle_sleeps_to_hold_the_rate():
    now = [0.0]
    slept = []
    throttle = Throttle(1000, lambda: now[0], lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    for _ in range(10):
        throttle.spend(500)
    assert now[0] == pytest.approx(5.0)


@pytest.mark.parametrize("crash_at_rename", [0, 1])
@pytest.mark.parametrize("crash_before_fsync_dir", [False, True])
def test_a_crash_at_each_swap_step_recovers_to_one_whole_log(tmp_path, monkeypatch, crash_at_rename,
                                                               crash_before_fsync_dir):
    """Rename 0 is .cleaned -> .swap (the decision), rename 1 the swap over the segment; the crash comes
    right before the rename, or right after it before the directory fsync."""
    history = random_history(seed=4, writes=300, keys=20)
    log = open_log(tmp_path / "t-0")
    write_history(log, history)
    expected_before = [(r.offset, r.key, r.value) for r in all_records(log)]
    renames = []

    class Crash(BaseException):
        pass

    real_rename = os.rename

    def rename(src, dst):
        if Path(src).name.endswith((".cleaned", ".swap")):
            if len(renames) == crash_at_rename and not crash_before_fsync_dir:
                raise Crash()
            real_rename(src, dst)
            renames.append((src, dst))
            if len(renames) - 1 == crash_at_rename and crash_before_fsync_dir:
                raise Crash()
        else:
            real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(Crash):
        run_pass(log)
    monkeypatch.setattr(os, "rename", real_rename)
    # The crashed log object is dropped as a killed process's would be. A starting broker opens its logs with
    # its default config (cleanup.policy=delete) before the topics' arrive, scanning them all (unclean start).
    recovered = open_log(tmp_path / "t-0", LogConfig(segment_bytes=2048), recovery_point=0)
    assert recovered.recovery_report.clean, recovered.recovery_report
    leftovers = [p.name for p in (tmp_path / "t-0").iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert leftovers == []
    after = [(r.offset, r.key, r.value) for r in all_records(recovered)]
    # the one segment either swapped or not; the log holds the latest value of every key either way
    latest = latest_by_key(history)
    assert {(key, value) for _, key, value in after if latest[key][0] == _} == {
        (key, value) for key, (_, value) in latest.items()}
    assert set(after) <= set(expected_before)
    assert not recovered.verify()
    recovered.update_config(compacted())  # the topic's config arrives
    run_pass(recovered)  # and a later pass finishes the job
    assert not recovered.verify()


def test_pure_decisions():
    segments = [CleanableSegment(0, 10, 100, T0_MS), CleanableSegment(10, 20, 100, T0_MS + 50),
                CleanableSegment(20, 30, 100, T0_MS + 100)]
    assert cleanable_prefix(segments, upper_offset=25, now_ms=T0_MS + 100, min_compaction_lag_ms=0) == 2
    assert cleanable_prefix(segments, upper_offset=30, now_ms=T0_MS + 100, min_compaction_lag_ms=60) == 1
    assert dirty_ratio(segments, 10) == pytest.approx(2 / 3)
    assert is_due(segments, 10, now_ms=T0_MS, min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=10**9)
    assert not is_due(segments, 20, now_ms=T0_MS + 200, min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=150)
    assert is_due(segments, 20, now_ms=T0_MS + 300, min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=150)
    assert kept_runs([3, 4, 5, 8, 10, 11]) == [(0, 3), (3, 4), (4, 6)]
    offsets = KeyOffsets(keys_max=2)
    assert offsets.try_add_segment([(b"a", 0), (b"b", 1)], 2)
    assert not offsets.try_add_segment([(b"c", 2)], 3) and offsets.end_offset == 2
    assert offsets.try_add_segment([(b"a", 3), (None, 4)], 5) and offsets.latest(b"a") == 3


def test_topic_overrides_set_the_policy_and_retention_leaves_a_compact_only_log_alone(tmp_path):
    config = LogConfig().with_topic_overrides({"cleanup.policy": "compact", "delete.retention.ms": "5",
                                               "min.cleanable.dirty.ratio": "0.01", "retention.ms": "1"})
    assert config.compacts and not config.deletes and config.delete_retention_ms == 5
    assert config.as_topic_configs()["cleanup.policy"] == "compact"
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=300, cleanup_policy="compact", retention_ms=1),
                            ManualClock(T0_MS))
    write_history(log, [(b"k", b"x" * 50)] * 30, per_batch=1)
    assert log.delete_old_segments(T0_MS + DAY_MS) == []


def test_segments_left_empty_are_removed_and_their_offsets_still_read(tmp_path):
    log = open_log(tmp_path / "t-0")
    write_history(log, [(b"k", b"x" * 100 + b"%d" % i) for i in range(300)], per_batch=1)
    segments_before = log.segment_count
    active_base = log.cleanable_segments()[-1].next_offset
    run_pass(log)
    assert log.segment_count <= 3 < segments_before  # the first (where the log starts), the last kept, the active
    assert log.log_start_offset == 0
    records = all_records(log)
    assert len([r for r in records if r.offset < active_base]) == 1  # the latest below the active segment
    assert decode_records(log.read(0, 1 << 20))[0].offset == records[0].offset
    assert not log.verify()
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert [(r.offset, r.value) for r in all_records(reopened)] == [(r.offset, r.value) for r in records]


def test_truncation_into_a_gap_keeps_what_lies_below_it(tmp_path):
    history = [(b"once", b"kept")] + [(b"k%d" % (i % 5), b"v%d" % i) for i in range(400)]
    log = open_log(tmp_path / "t-0")
    write_history(log, history, per_batch=1)
    run_pass(log)
    kept = [r.offset for r in all_records(log)]
    gap_at = next(o + 1 for o, after in zip(kept, kept[1:]) if after > o + 1) + 1  # inside the gap after offset 0
    log.truncate_to(gap_at)
    assert log.log_end_offset == gap_at
    assert [r.offset for r in all_records(log)] == [o for o in kept if o < gap_at]
    log.append_as_leader(encode_batch([(b"k0", b"after", T0_MS)]), leader_epoch=1)
    assert all_records(log)[-1].offset == gap_at and not log.verify()
    log.close()
    assert [r.offset for r in all_records(open_log(tmp_path / "t-0"))] == [o for o in kept if o < gap_at] + [gap_at]


def test_a_stopping_cleaner_ends_its_pass_and_the_log_stays_whole(tmp_path):
    from replog.broker.log.cleaner import CleaningStopped

    history = random_history(seed=5, writes=300, keys=20)
    log = open_log(tmp_path / "t-0")
    write_history(log, history)
    before = [(r.offset, r.value) for r in all_records(log)]
    steps = iter(range(1000))

    def stopping() -> bool:  # the stop comes after a few batches, in the middle of the pass
        return next(steps) >= 5

    throttle = Throttle(0, lambda: 0.0, lambda s: None, stopping=stopping)
    with pytest.raises(CleaningStopped):
        run_pass(log, throttle=throttle)
    assert [(r.offset, r.value) for r in all_records(log)] == before
    log.close()
    assert [(r.offset, r.value) for r in all_records(open_log(tmp_path / "t-0"))] == before
