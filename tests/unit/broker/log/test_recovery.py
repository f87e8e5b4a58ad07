"""Start-up recovery (torn and corrupt tails), verify(), index and epoch cache rebuilding."""

from __future__ import annotations

import logging
import os
import struct

from replog.broker.log import PartitionLog, LogConfig
from replog.common.records import HEADER_SIZE, decode_records

ACTIVE = "00000000000000000000.log"


def fill(log, logs, batch_count, leader_epoch=0):
    for _ in range(batch_count):
        log.append_as_leader(logs.batch(2), leader_epoch)


def segment_paths(logs):
    return sorted(logs.directory.glob("*.log"))


def test_torn_write_is_cut_back_to_the_last_whole_batch(logs, caplog):
    log = logs.open()
    fill(log, logs, 5)
    batch_size_bytes = log.size_bytes // 5
    log.close()
    path = logs.directory / ACTIVE
    os.truncate(path, path.stat().st_size - 10)  # the last batch is missing its last 10 bytes
    with caplog.at_level(logging.WARNING):
        log = logs.open()
    assert log.log_end_offset == 8
    report = log.recovery_report
    assert (report.segment, report.bytes_dropped) == (ACTIVE, batch_size_bytes - 10)
    assert "torn tail" in report.reason
    assert path.stat().st_size == 4 * batch_size_bytes
    assert "dropped" in caplog.text and str(batch_size_bytes - 10) in caplog.text
    fill(log, logs, 1)  # the log goes on from the cut
    assert [r.offset for r in decode_records(log.read(0, 10**9))] == list(range(10))


def test_torn_header_and_zero_filled_tail(logs):
    log = logs.open()
    fill(log, logs, 3)
    size_bytes = log.size_bytes
    log.close()
    path = logs.directory / ACTIVE
    with open(path, "ab") as f:
        f.write(b"\x00" * (HEADER_SIZE - 1))
    log = logs.open()
    assert (log.log_end_offset, log.recovery_report.bytes_dropped) == (6, HEADER_SIZE - 1)
    log.close()
    with open(path, "ab") as f:
        f.write(b"\x00" * 4096)  # the file grew but the data never reached the disk
    log = logs.open()
    assert (log.log_end_offset, log.recovery_report.bytes_dropped) == (6, 4096)
    assert "corrupt" in log.recovery_report.reason
    assert path.stat().st_size == size_bytes


def test_corrupt_batch_in_the_active_segment_cuts_the_log_there(logs):
    log = logs.open()
    fill(log, logs, 5)
    batch_size_bytes = log.size_bytes // 5
    log.close()
    path = logs.directory / ACTIVE
    with open(path, "r+b") as f:
        f.seek(2 * batch_size_bytes + HEADER_SIZE + 3)  # inside the third batch's records
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    log = logs.open()
    assert log.log_end_offset == 4
    assert log.recovery_report.bytes_dropped == 3 * batch_size_bytes
    assert "CRC mismatch" in log.recovery_report.reason


def test_clean_open_reports_nothing_dropped(logs):
    log = logs.open(segment_bytes=1000)
    fill(log, logs, 30)
    log.close()
    log = logs.open(segment_bytes=1000)
    report = log.recovery_report
    assert report.clean and report.reason is None and report.segment is None
    assert report.segments_scanned == (segment_paths(logs)[-1].name,)


def test_recovery_point_scans_from_its_segment_and_deletes_segments_after_a_cut(logs):
    config = LogConfig(segment_bytes=1000)
    log = PartitionLog.open(logs.directory, config, logs.clock)
    fill(log, logs, 30)
    log.close()
    paths = segment_paths(logs)
    assert len(paths) >= 4
    second_base = int(paths[1].name[:20])
    with open(paths[1], "r+b") as f:  # a torn write that was never fsynced before the roll
        f.truncate(paths[1].stat().st_size - 1)
    log = PartitionLog.open(logs.directory, config, logs.clock, recovery_point=second_base + 1)
    report = log.recovery_report
    assert report.segments_scanned[0] == paths[1].name
    assert report.segment == paths[1].name
    assert report.segments_deleted == tuple(p.name for p in paths[2:])
    assert [p.name for p in segment_paths(logs)] == [p.name for p in paths[:2]]
    assert log.log_end_offset < int(paths[2].name[:20])
    assert log.verify() == []


def test_verify_reports_a_corrupted_byte_in_the_middle_of_a_segment(logs):
    log = logs.open(segment_bytes=1000)
    fill(log, logs, 30)
    first = segment_paths(logs)[0]
    batch_size_bytes = len(log.read(0, 1))
    assert log.verify() == []
    position = 3 * batch_size_bytes
    with open(first, "r+b") as f:
        f.seek(position + HEADER_SIZE + 1)
        f.write(b"\xee")
    reports = log.verify()
    assert len(reports) == 1
    assert (reports[0].segment, reports[0].position) == (first.name, position)
    assert "CRC mismatch" in reports[0].reason
    log.close()
    # Not in the active segment, so start-up recovery does not scan it by default...
    assert logs.open(segment_bytes=1000).recovery_report.clean


def test_index_is_rebuilt_when_deleted_or_inconsistent(logs):
    config = dict(segment_bytes=5000, index_interval_bytes=200)
    log = logs.open(**config)
    fill(log, logs, 100)
    expected = log.read(0, 10**9)
    log.close()
    first_index = logs.directory / "00000000000000000000.index"
    original = first_index.read_bytes()
    assert len(original) > 8
    first_index.unlink()
    log = logs.open(**config)
    assert first_index.name in log.recovery_report.indexes_rebuilt
    assert first_index.read_bytes() == original
    assert log.read(0, 10**9) == expected
    log.close()
    relative_offset, position = struct.unpack(">iI", original[-8:])
    first_index.write_bytes(original[:-8] + struct.pack(">iI", relative_offset, position + 5))  # mid-batch
    log = logs.open(**config)
    assert first_index.name in log.recovery_report.indexes_rebuilt
    assert first_index.read_bytes() == original
    log.close()
    first_index.write_bytes(original[:-3])  # torn
    log = logs.open(**config)
    assert first_index.name in log.recovery_report.indexes_rebuilt
    for start in range(0, 200, 7):
        assert decode_records(log.read(start, 1))[-1].offset >= start


def test_leftovers_are_removed(logs):
    log = logs.open()
    fill(log, logs, 1)
    log.close()
    (logs.directory / "leader-epoch-checkpoint.tmp").write_text("junk")
    (logs.directory / "00000000000000000999.index").write_bytes(b"")
    log = logs.open()
    assert not (logs.directory / "leader-epoch-checkpoint.tmp").exists()
    assert not (logs.directory / "00000000000000000999.index").exists()
    assert log.log_end_offset == 2


def test_epoch_cache_is_repaired_from_the_log(logs):
    log = logs.open()
    fill(log, logs, 2, leader_epoch=1)
    fill(log, logs, 2, leader_epoch=4)
    log.close()
    checkpoint = logs.directory / "leader-epoch-checkpoint"
    checkpoint.unlink()
    assert logs.open().epoch_entries() == [(1, 0), (4, 4)]
    checkpoint.write_text("0\n1\n1 0\n")  # lost the epoch-4 entry
    log = logs.open()
    assert log.epoch_entries() == [(1, 0), (4, 4)]
    log.close()
    checkpoint.write_text("0\n2\nnot a line\n")
    assert logs.open().epoch_entries() == [(1, 0), (4, 4)]


def test_epoch_entries_past_the_recovered_end_are_dropped(logs):
    log = logs.open()
    fill(log, logs, 2, leader_epoch=1)
    fill(log, logs, 1, leader_epoch=2)
    batch_size_bytes = log.size_bytes // 3
    log.close()
    os.truncate(logs.directory / ACTIVE, 2 * batch_size_bytes + 1)  # the epoch-2 batch is torn
    log = logs.open()
    assert log.log_end_offset == 4
    assert log.epoch_entries() == [(1, 0)]
    assert "2 4" not in (logs.directory / "leader-epoch-checkpoint").read_text()
