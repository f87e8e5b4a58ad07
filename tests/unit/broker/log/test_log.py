"""PartitionLog: appends, reads, segments, truncation, follower appends, flushing."""

from __future__ import annotations

import os

import pytest

from replog.broker.log import (
    AppendInfo,
    CorruptRecordError,
    LogConfig,
    LogOffsetMismatchError,
    OffsetOutOfRangeError,
    PartitionLog,
    RecordTooLargeError,
)
from replog.common.records import decode_records, encode_batch, encode_empty_batch, iter_batches, read_header

T0_MS = 1_700_000_000_000


def offsets(data: bytes) -> list[int]:
    return [record.offset for record in decode_records(data)]


def batch_bases(data: bytes) -> list[int]:
    return [header.base_offset for _, header in iter_batches(data)]


def fill(log: PartitionLog, logs, batch_count: int, records_per_batch: int = 2, leader_epoch: int = 0) -> None:
    for _ in range(batch_count):
        log.append_as_leader(logs.batch(records_per_batch), leader_epoch)


# -- appends and reads ----------------------------------------------------------


def test_new_log_is_empty(logs):
    log = logs.open()
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    assert log.latest_epoch() == -1
    assert log.read(0, 1000) == b""
    assert log.recovery_report.clean
    assert (logs.directory / "00000000000000000000.log").exists()


def test_append_as_leader_assigns_offsets_and_stamps_the_leader_epoch(logs):
    log = logs.open()
    first = log.append_as_leader(logs.batch(3, base_offset=999, leader_epoch=77), leader_epoch=4)
    second = log.append_as_leader(logs.batch(2), leader_epoch=4)
    assert first == AppendInfo(0, 2, T0_MS, 3, len(logs.batch(3)))
    assert (second.base_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    data = log.read(0, 10_000)
    assert offsets(data) == [0, 1, 2, 3, 4]
    assert {read_header(data, pos).partition_leader_epoch for pos, _ in iter_batches(data)} == {4}


def test_segments_roll_by_size_and_reads_cross_them(logs):
    log = logs.open(segment_bytes=1000, index_interval_bytes=200)
    fill(log, logs, 60)
    assert log.segment_count > 5
    names = sorted(p.name for p in logs.directory.glob("*.log"))
    assert names[0] == "00000000000000000000.log" and all(len(n) == 24 for n in names)
    assert all(os.path.getsize(logs.directory / n) <= 1000 for n in names)
    assert offsets(log.read(0, 10**9)) == list(range(120))
    for start in (0, 1, 17, 33, 64, 119):
        assert offsets(log.read(start, 10**9))[0] == start - start % 2  # whole batches of 2
    assert log.size_bytes == sum(os.path.getsize(logs.directory / n) for n in names)


def test_read_honours_upper_offset(logs):
    log = logs.open(segment_bytes=1000)
    fill(log, logs, 10)  # batches start at 0, 2, 4, ...
    assert batch_bases(log.read(0, 10**9, upper_offset=6)) == [0, 2, 4]
    assert batch_bases(log.read(0, 10**9, upper_offset=5)) == [0, 2, 4]  # 4 starts below 5
    assert log.read(6, 10**9, upper_offset=6) == b""  # a consumer at the HW
    assert log.read(8, 10**9, upper_offset=6) == b""  # between HW and LEO: empty, not an error


def test_read_max_bytes_returns_whole_batches_and_always_makes_progress(logs):
    log = logs.open(segment_bytes=10**6)
    fill(log, logs, 10)
    batch_size_bytes = len(log.read(0, 1))
    assert batch_bases(log.read(0, 1)) == [0]  # larger than max_bytes, still returned
    assert batch_bases(log.read(0, 2 * batch_size_bytes)) == [0, 2]
    assert batch_bases(log.read(0, 3 * batch_size_bytes - 1)) == [0, 2]
    assert batch_bases(log.read(3, 0)) == [2]


def test_read_out_of_range(logs):
    log = logs.open()
    fill(log, logs, 3)
    assert log.read(6, 100) == b""  # at the LEO
    with pytest.raises(OffsetOutOfRangeError, match=r"offset 7 is out of range: the log holds \[0, 6\)"):
        log.read(7, 100)
    log.truncate_fully_and_start_at(100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(99, 100)


def test_oversize_batch_is_refused_with_nothing_written(logs):
    log = logs.open(max_batch_bytes=500)
    fill(log, logs, 1)
    size_bytes = log.size_bytes
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(logs.batch(20), leader_epoch=0)
    assert (log.log_end_offset, log.size_bytes) == (2, size_bytes)
    assert os.path.getsize(logs.directory / "00000000000000000000.log") == size_bytes


def test_corrupt_or_concatenated_producer_batch_is_refused(logs):
    log = logs.open()
    bad = bytearray(logs.batch(2))
    bad[-3] ^= 0x40
    with pytest.raises(CorruptRecordError, match="CRC"):
        log.append_as_leader(bytes(bad), leader_epoch=0)
    with pytest.raises(CorruptRecordError, match="follow the batch"):
        log.append_as_leader(logs.batch(1) + logs.batch(1), leader_epoch=0)
    empty = encode_empty_batch(base_offset=0, last_offset_delta=0, leader_epoch=-1, timestamp_ms=T0_MS,
                               producer_id=1, producer_epoch=0, base_sequence=0)
    with pytest.raises(CorruptRecordError, match="only the log cleaner"):  # a compacted log's, not a producer's
        log.append_as_leader(empty, leader_epoch=0)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_leader_epoch_going_backwards_is_a_caller_bug(logs):
    log = logs.open()
    log.append_as_leader(logs.batch(), leader_epoch=5)
    with pytest.raises(AssertionError):
        log.append_as_leader(logs.batch(), leader_epoch=4)


def test_offset_for_timestamp(logs):
    log = logs.open(segment_bytes=600)
    for i in range(20):
        log.append_as_leader(logs.batch(2, timestamp_ms=T0_MS + 10 * i), leader_epoch=0)
    assert log.offset_for_timestamp(0) == (0, T0_MS)
    assert log.offset_for_timestamp(T0_MS + 50) == (10, T0_MS + 50)
    assert log.offset_for_timestamp(T0_MS + 51) == (12, T0_MS + 60)
    assert log.offset_for_timestamp(T0_MS + 191) is None
    log.close()
    assert logs.open(segment_bytes=600).offset_for_timestamp(T0_MS + 51) == (12, T0_MS + 60)


def test_a_negative_timestamp_finds_the_first_record_or_none_in_an_empty_log(logs):
    # An empty segment's max timestamp (-1, none) matched a negative target, whose search then found no record
    # and failed an assertion inside a ListOffsets call (found by the RPC fuzz, tests/fuzz/).
    log = logs.open(segment_bytes=600)
    assert log.offset_for_timestamp(-(1 << 63)) is None
    for i in range(20):
        log.append_as_leader(logs.batch(2, timestamp_ms=T0_MS + 10 * i), leader_epoch=0)
    assert log.offset_for_timestamp(-5) == (0, T0_MS)
    assert log.offset_for_timestamp(T0_MS + 191) is None


def test_offset_for_timestamp_finds_the_first_record_in_a_batch(logs):
    log = logs.open()
    log.append_as_leader(encode_batch([(None, b"a", T0_MS + 9), (None, b"b", T0_MS + 3), (None, b"c", T0_MS + 7)]), 0)
    assert log.offset_for_timestamp(T0_MS + 5) == (0, T0_MS + 9)
    assert log.offset_for_timestamp(T0_MS + 1) == (0, T0_MS + 9)
    assert log.offset_for_timestamp(T0_MS + 10) is None


# -- follower appends ----------------------------------------------------------------


def test_follower_append_keeps_the_leaders_offsets_and_epochs(logs, tmp_path):
    leader = logs.open()
    fill(leader, logs, 3, leader_epoch=1)
    fill(leader, logs, 2, leader_epoch=3)
    follower = PartitionLog.open(tmp_path / "follower", LogConfig(), logs.clock)
    info = follower.append_as_follower(leader.read(0, 10**9))
    # It reports the batches' headers too, which the broker's producer state reads.
    headers = tuple(header for _, header in iter_batches(leader.read(0, 10**9)))
    assert info == AppendInfo(0, 9, T0_MS, 10, leader.size_bytes, headers)
    assert [(h.base_offset, h.partition_leader_epoch) for h in info.headers] == [(0, 1), (2, 1), (4, 1), (6, 3), (8, 3)]
    assert follower.read(0, 10**9) == leader.read(0, 10**9)
    assert follower.epoch_entries() == leader.epoch_entries() == [(1, 0), (3, 6)]
    assert follower.append_as_follower(b"") is None


def test_follower_append_at_the_wrong_offset_is_refused_with_nothing_written(logs, tmp_path):
    leader = logs.open()
    fill(leader, logs, 4)
    follower = PartitionLog.open(tmp_path / "follower", LogConfig(), logs.clock)
    follower.append_as_follower(leader.read(0, 1))
    with pytest.raises(LogOffsetMismatchError, match="starts at offset 0, expected 2"):
        follower.append_as_follower(leader.read(0, 10**9))
    assert follower.log_end_offset == 2
    overlap = leader.read(2, 1) + leader.read(2, 1)
    with pytest.raises(LogOffsetMismatchError, match="position"):
        follower.append_as_follower(overlap)
    assert follower.log_end_offset == 2
    assert not follower.gaps_allowed


def test_a_follower_takes_a_forward_gap_whatever_its_policy_and_reads_its_log_as_compacted_for_good(logs, tmp_path):
    """A leader's batches start above the follower's LEO only where the leader's cleaner removed records
    (a stale answer is dropped before the log sees it); the follower may not know the topic compacts, or
    the policy changed since."""
    leader = logs.open()
    fill(leader, logs, 4)
    follower = PartitionLog.open(tmp_path / "follower", LogConfig(), logs.clock)
    follower.append_as_follower(leader.read(0, 1))
    follower.append_as_follower(leader.read(4, 1) + leader.read(6, 1))
    assert follower.log_end_offset == 8 and follower.gaps_allowed
    assert offsets(follower.read(0, 10**9)) == [0, 1, 4, 5, 6, 7]
    assert not follower.verify()
    follower.close()
    reopened = PartitionLog.open(tmp_path / "follower", LogConfig(), logs.clock, recovery_point=0)
    assert reopened.recovery_report.clean and offsets(reopened.read(2, 10**9)) == [4, 5, 6, 7]
    assert not reopened.verify()


def test_follower_append_refuses_corrupt_or_incomplete_data(logs, tmp_path):
    leader = logs.open()
    fill(leader, logs, 2)
    data = leader.read(0, 10**9)
    follower = PartitionLog.open(tmp_path / "follower", LogConfig(), logs.clock)
    with pytest.raises(CorruptRecordError, match="incomplete"):
        follower.append_as_follower(data[:-1])
    corrupt = bytearray(data)
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        follower.append_as_follower(bytes(corrupt))
    assert follower.log_end_offset == 0 and follower.size_bytes == 0


# -- truncation --------------------------------------------------------------------------


def test_truncate_to_a_batch_boundary_mid_segment(logs):
    log = logs.open(index_interval_bytes=100)
    fill(log, logs, 10)
    log.truncate_to(6)
    assert log.log_end_offset == 6
    assert offsets(log.read(0, 10**9)) == list(range(6))
    fill(log, logs, 1)
    assert offsets(log.read(0, 10**9)) == list(range(8))


def test_truncate_to_inside_a_batch_drops_the_whole_batch(logs):
    log = logs.open()
    fill(log, logs, 5)
    log.truncate_to(7)  # batch [6, 7] goes whole
    assert log.log_end_offset == 6
    log.truncate_to(100)  # past the LEO: nothing to do
    assert log.log_end_offset == 6


def test_truncate_across_segments(logs):
    log = logs.open(segment_bytes=1000, index_interval_bytes=200)
    fill(log, logs, 60)
    segment_count = log.segment_count
    log.truncate_to(31)
    assert log.log_end_offset == 30
    assert log.segment_count < segment_count
    assert len(list(logs.directory.glob("*.log"))) == log.segment_count
    assert offsets(log.read(0, 10**9)) == list(range(30))
    fill(log, logs, 30)
    assert offsets(log.read(0, 10**9)) == list(range(90))
    log.close()
    reopened = logs.open(segment_bytes=1000, index_interval_bytes=200)
    assert reopened.log_end_offset == 90 and reopened.recovery_report.clean
    assert offsets(reopened.read(25, 10**9))[:3] == [24, 25, 26]


def test_truncate_to_a_segment_base_leaves_an_empty_active_segment(logs):
    log = logs.open(segment_bytes=1000)
    fill(log, logs, 30)
    base = sorted(int(p.name[:20]) for p in logs.directory.glob("*.log"))[2]
    log.truncate_to(base)
    assert log.log_end_offset == base
    assert log.read(base, 100) == b""
    fill(log, logs, 1)
    assert offsets(log.read(base, 100)) == [base, base + 1]


def test_truncate_fully_and_start_at(logs):
    log = logs.open(segment_bytes=1000)
    fill(log, logs, 30, leader_epoch=2)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (500, 500, 0)
    assert log.epoch_entries() == [] and log.latest_epoch() == -1
    assert [p.name for p in logs.directory.glob("*.log")] == ["00000000000000000500.log"]
    info = log.append_as_leader(logs.batch(), leader_epoch=3)
    assert info.base_offset == 500
    log.close()
    reopened = logs.open()
    assert (reopened.log_start_offset, reopened.log_end_offset) == (500, 501)
    assert reopened.epoch_entries() == [(3, 500)]


# -- flushing and lifecycle -------------------------------------------------------


def test_flush_by_count_interval_and_per_append(logs):
    log = logs.open(flush_messages=5, flush_interval_ms=1000)
    fill(log, logs, 2)  # 4 records
    assert log.recovery_point == 0
    fill(log, logs, 1)  # 6 >= 5
    assert log.recovery_point == 6
    fill(log, logs, 1)
    logs.clock.advance(999)
    assert not log.maybe_flush()
    logs.clock.advance(1)
    assert log.maybe_flush() and log.recovery_point == 8
    log.append_as_leader(logs.batch(), leader_epoch=0, fsync=True)
    assert log.recovery_point == 9


def test_no_flush_policy_flushes_on_close(logs):
    log = logs.open()
    fill(log, logs, 3)
    assert log.recovery_point == 0
    log.close()
    log.close()  # idempotent
    assert logs.open().recovery_point == 6


def test_delete_removes_the_directory(logs):
    log = logs.open()
    fill(log, logs, 3)
    log.delete()
    assert not logs.directory.exists()


def test_config_is_validated():
    with pytest.raises(ValueError, match="segment_bytes"):
        LogConfig(segment_bytes=0)
    with pytest.raises(ValueError, match="flush_messages"):
        LogConfig(flush_messages=0)


def test_truncate_below_the_log_start_restarts_the_log_there(logs):
    log = logs.open()
    log.truncate_fully_and_start_at(100)
    fill(log, logs, 3)
    log.truncate_to(40)
    assert (log.log_start_offset, log.log_end_offset) == (40, 40)
    with pytest.raises(ValueError):
        log.truncate_to(-1)


def test_truncate_is_durable_and_lowers_the_recovery_point(logs):
    log = logs.open()
    fill(log, logs, 5)
    log.flush()
    assert log.recovery_point == 10
    log.truncate_to(4)
    assert log.recovery_point == 4
    size_bytes = log.size_bytes
    assert os.path.getsize(logs.directory / "00000000000000000000.log") == size_bytes


def test_reads_of_recent_batches_match_a_reopened_log_that_must_scan(logs):
    """The active segment answers reads of its last appends from memory; the bytes must be exactly
    those of the general path (a reopened log remembers nothing and scans), for every start,
    byte limit and upper offset, also after a truncation."""
    log = logs.open(index_interval_bytes=100)
    for i in range(24):  # more batches than the segment remembers, of varying sizes
        log.append_as_leader(logs.batch(record_count=1 + i % 4, value_bytes=10 + 7 * i), leader_epoch=0, fsync=False)

    def check(log_end_offset: int) -> None:
        scanning = logs.open(index_interval_bytes=100)
        try:
            for start in range(log_end_offset):
                for max_bytes in (1, 150, 400, 5000):
                    for upper in (None, start + 1, start + 5, log_end_offset):
                        assert log.read(start, max_bytes, upper) == scanning.read(start, max_bytes, upper), \
                            (start, max_bytes, upper)
        finally:
            scanning.close()

    check(log.log_end_offset)
    log.truncate_to(40)
    log.append_as_leader(logs.batch(record_count=3), leader_epoch=1, fsync=False)
    check(log.log_end_offset)
    log.close()
