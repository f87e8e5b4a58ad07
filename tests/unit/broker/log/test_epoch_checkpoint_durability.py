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
