"""Rolled segments fsynced off the append path (LogConfig.fsync_on_roll False).

The owner (the broker's checkpointer) asks for the pending segments as duplicated
descriptors, fsyncs them without holding the log, and reports back; only then does
the recovery point move past them. A cut in between voids the report."""

from __future__ import annotations

import os

from replog.broker.log import PartitionLog


def fill(log, logs, batches: int) -> None:
    for _ in range(batches):
        log.append_as_leader(logs.batch(2), leader_epoch=0)


def sync(log) -> None:
    token, pending = log.rolled_segments_to_sync()
    try:
        for fd, _ in pending:
            os.fsync(fd)
    finally:
        for fd, _ in pending:
            os.close(fd)
    if pending:
        log.rolled_segments_synced(token, pending[-1][1])


def test_rolls_do_not_move_the_recovery_point_until_the_owner_syncs(logs):
    log = logs.open(segment_bytes=1000, fsync_on_roll=False)
    fill(log, logs, 30)
    assert log.segment_count > 2 and log.recovery_point == 0
    token, pending = log.rolled_segments_to_sync()
    assert [next_offset for _, next_offset in pending] == sorted(next_offset for _, next_offset in pending)
    for fd, _ in pending:
        os.close(fd)
    sync(log)
    token, pending = log.rolled_segments_to_sync()
    assert pending == []
    active_base = int(sorted(p.name for p in logs.directory.glob("*.log"))[-1][:20])
    assert log.recovery_point == active_base < log.log_end_offset


def test_a_truncation_between_listing_and_reporting_voids_the_report(logs):
    log = logs.open(segment_bytes=1000, fsync_on_roll=False)
    fill(log, logs, 30)
    token, pending = log.rolled_segments_to_sync()
    log.truncate_to(10)
    fill(log, logs, 30)
    log.rolled_segments_synced(token, pending[-1][1])
    for fd, _ in pending:
        os.close(fd)
    assert log.recovery_point <= 10


def test_flush_syncs_pending_rolled_segments_and_the_active_one(logs):
    log = logs.open(segment_bytes=1000, fsync_on_roll=False)
    fill(log, logs, 30)
    log.flush()
    assert log.recovery_point == log.log_end_offset
    assert log.rolled_segments_to_sync()[1] == []


def test_reopening_from_the_recovery_point_scans_unsynced_rolled_segments(logs):
    log = logs.open(segment_bytes=1000, fsync_on_roll=False)
    fill(log, logs, 30)
    recovery_point = log.recovery_point
    names = sorted(p.name for p in logs.directory.glob("*.log"))
    for segment in log._segments:  # simulate a crash: nothing more reaches the disk
        segment.close()
    reopened = PartitionLog.open(logs.directory, log.config, logs.clock, recovery_point=recovery_point)
    assert set(reopened.recovery_report.segments_scanned) == set(names)
    assert reopened.log_end_offset == 60
