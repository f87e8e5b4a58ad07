"""The log start offset: DeleteRecords inside a segment, a reopened log, retention, new settings, rolls by age."""

from __future__ import annotations

import pytest

from replog.broker.log import LogConfig, OffsetOutOfRangeError, PartitionLog, RecordTooLargeError
from replog.common.core.errors import InvalidConfigError
from replog.common.records import decode_records

from .conftest import T0_MS


def fill(log: PartitionLog, logs, batch_count: int, *, timestamp_ms: int = T0_MS) -> None:
    for _ in range(batch_count):
        log.append_as_leader(logs.batch(2, timestamp_ms=timestamp_ms), 0)


def test_advancing_inside_a_segment_hides_the_records_below_and_deletes_whole_segments_only(logs):
    log = logs.open(segment_bytes=400)
    fill(log, logs, 10)  # 20 records, a few per segment
    segments_before = log.segment_count
    assert log.advance_log_start_offset(7)
    assert log.log_start_offset == 7
    assert log.segment_count < segments_before  # the segments wholly below 7 went
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 1 << 20)
    records = [r.offset for r in decode_records(log.read(7, 1 << 20)) if r.offset >= 7]
    assert records[0] == 7
    assert not log.advance_log_start_offset(5)  # never lowered
    assert log.log_start_offset == 7


def test_a_reopened_log_takes_its_checkpointed_start_capped_at_its_end(logs):
    log = logs.open()
    fill(log, logs, 5)
    log.close()
    reopened = PartitionLog.open(logs.directory, LogConfig(), logs.clock, log_start_offset=3)
    assert reopened.log_start_offset == 3
    reopened.close()
    capped = PartitionLog.open(logs.directory, LogConfig(), logs.clock, log_start_offset=99)
    assert capped.log_start_offset == capped.log_end_offset == 10


def test_a_truncation_below_a_start_inside_the_cut_batch_lowers_the_start_to_the_new_end(logs):
    log = logs.open()
    fill(log, logs, 3)  # batches [0,1] [2,3] [4,5]
    log.advance_log_start_offset(3)
    log.truncate_to(4)  # keeps [0,1] [2,3]
    assert (log.log_start_offset, log.log_end_offset) == (3, 4)
    log.truncate_to(3)  # the batch [2,3] straddles 3 and goes whole
    assert log.log_start_offset == log.log_end_offset == 2


def test_retention_by_time_moves_the_start_to_the_first_kept_segment(logs):
    log = logs.open(segment_bytes=400, retention_ms=60_000)
    fill(log, logs, 6, timestamp_ms=T0_MS - 120_000)
    old_end = log.log_end_offset
    fill(log, logs, 6)
    deleted = log.delete_old_segments(T0_MS, upper_offset=log.log_end_offset)
    assert deleted and 0 < log.log_start_offset <= old_end


def test_new_settings_apply_to_a_running_log(logs):
    log = logs.open()
    fill(log, logs, 4)
    log.update_config(LogConfig(segment_bytes=300, max_batch_bytes=120))
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(logs.batch(2), 0)
    log.update_config(LogConfig(segment_bytes=300))
    fill(log, logs, 4)
    assert log.segment_count > 1  # the new segment size rolled the active segment


def test_segment_ms_rolls_by_the_age_of_the_active_segment(logs):
    log = logs.open(segment_ms=1000)
    fill(log, logs, 2)
    assert log.segment_count == 1
    logs.clock.advance(999)
    fill(log, logs, 1)
    assert log.segment_count == 1
    logs.clock.advance(1)
    fill(log, logs, 1)
    assert log.segment_count == 2


def test_topic_overrides_are_laid_over_the_broker_defaults():
    defaults = LogConfig(segment_bytes=1000, retention_ms=5000, segment_ms=9000)
    config = defaults.with_topic_overrides({"retention.ms": "-1", "retention.bytes": "2048", "segment.ms": "100",
                                            "max.message.bytes": "300", "flush.messages": "1",
                                            "min.insync.replicas": "2"})
    assert (config.segment_bytes, config.retention_ms, config.retention_bytes) == (1000, None, 2048)
    assert (config.segment_ms, config.max_batch_bytes, config.flush_messages) == (100, 300, 1)
    assert defaults.with_topic_overrides({}) is defaults
    with pytest.raises(InvalidConfigError, match="segment.bytes"):
        defaults.with_topic_overrides({"segment.bytes": "1"})
    assert defaults.as_topic_configs()["retention.bytes"] == "-1"
    assert defaults.as_topic_configs()["segment.ms"] == "9000"


def test_segment_ms_set_on_a_running_log_counts_from_the_next_write(logs):
    log = logs.open(segment_bytes=300)
    fill(log, logs, 6)  # rolled by size, with no age limit
    segments = log.segment_count
    logs.clock.advance(10_000)
    log.update_config(LogConfig(segment_bytes=100_000, segment_ms=1000))
    log.append_as_leader(logs.batch(1), 0)
    assert log.segment_count == segments  # the age counts from this write, not from the last roll
    logs.clock.advance(1000)
    log.append_as_leader(logs.batch(1), 0)
    assert log.segment_count == segments + 1


def test_deleted_segments_can_be_set_aside_for_removal_without_the_log(logs):
    from replog.broker.log.segments import SET_ASIDE_SUFFIX, remove_set_aside

    log = logs.open(segment_bytes=400, remove_deleted_at_once=False)
    fill(log, logs, 10)
    log.advance_log_start_offset(9)
    aside = sorted(logs.directory.glob("*" + SET_ASIDE_SUFFIX))
    assert aside and log.has_set_aside_files  # renamed under the log's owner's lock, not yet removed
    taken = log.take_set_aside_files()
    assert sorted(taken) == aside and not log.has_set_aside_files
    remove_set_aside(logs.directory, taken)
    assert not list(logs.directory.glob("*" + SET_ASIDE_SUFFIX))

    log.advance_log_start_offset(15)  # a crash before removal leaves them: the next open removes them
    log.close()
    assert list(logs.directory.glob("*" + SET_ASIDE_SUFFIX))
    reopened = PartitionLog.open(logs.directory, LogConfig(segment_bytes=400), logs.clock, log_start_offset=15)
    assert not list(logs.directory.glob("*" + SET_ASIDE_SUFFIX)) and reopened.log_start_offset == 15
