"""A new epoch only marks the checkpoint dirty; the next flush writes it durably;
if a crash comes first while the records survive, start-up recovery
rebuilds the entry from the batch headers."""

from __future__ import annotations

from replog.broker.log import LogConfig, PartitionLog
from replog.broker.log.checkpoints import read_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from replog.common.clock import ManualClock
from replog.common.records import encode_batch

CHECKPOINT = "leader-epoch-checkpoint"


def batch(n: int = 1) -> bytes:
    return encode_batch([(None, b"v", 0)] * n)


def test_an_epoch_not_yet_checkpointed_is_rebuilt_by_recovery(tmp_path):
    log = PartitionLog.open(tmp_path, LogConfig(), ManualClock())
    log.append_as_leader(batch(3), leader_epoch=1)
    log.flush()
    assert read_leader_epoch_checkpoint(tmp_path / CHECKPOINT) == [(1, 0)]
    log.append_as_leader(batch(2), leader_epoch=4)  # new epoch: the checkpoint waits for a flush
    log._segments[-1].flush()  # the records reached the disk...
    assert read_leader_epoch_checkpoint(tmp_path / CHECKPOINT) == [(1, 0)]  # ...the checkpoint did not
    reopened = PartitionLog.open(tmp_path, LogConfig(), ManualClock())
    assert reopened.epoch_entries() == [(1, 0), (4, 3)]
    assert reopened.end_offset_for_epoch(1) == (1, 3)
    assert reopened.end_offset_for_epoch(4) == (4, 5)


def test_flush_makes_the_new_epoch_durable(tmp_path):
    log = PartitionLog.open(tmp_path, LogConfig(), ManualClock())
    log.append_as_leader(batch(), leader_epoch=2)
    log.flush()
    assert read_leader_epoch_checkpoint(tmp_path / CHECKPOINT) == [(2, 0)]
    log.close()


def test_reopening_a_log_without_epochs_writes_no_checkpoint(tmp_path, monkeypatch):
    import os

    PartitionLog.open(tmp_path, LogConfig(), ManualClock()).close()
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    for _ in range(2):  # an idle replica restarted: its missing checkpoint reads as an empty one
        reopened = PartitionLog.open(tmp_path, LogConfig(), ManualClock())
        assert reopened.epoch_entries() == []
        reopened.close()
    assert not (tmp_path / CHECKPOINT).exists()
    assert synced == []


def test_a_missing_checkpoint_of_a_log_with_epochs_is_written_again(tmp_path):
    log = PartitionLog.open(tmp_path, LogConfig(), ManualClock())
    log.append_as_leader(batch(2), leader_epoch=3)
    log.close()
    (tmp_path / CHECKPOINT).unlink()
    reopened = PartitionLog.open(tmp_path, LogConfig(), ManualClock())
    assert reopened.epoch_entries() == [(3, 0)]
    assert read_leader_epoch_checkpoint(tmp_path / CHECKPOINT) == [(3, 0)]
