"""The replica manager's files.

- Checkpoint files are rewritten when an HW or recovery point moved, not otherwise.
- A deleted replica's directory is renamed aside at once and removed in the background; one left
  by a stop is removed at the next start, and never taken for a partition.
"""

from __future__ import annotations

from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log import LogConfig
from replog.broker.log.checkpoints import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.broker.replicas.leader_side import append_produced
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import encode_batch, validate_batch
from tests.unit.broker.thread_helpers import wait_for


def test_checkpoints_are_rewritten_only_when_they_would_change(tmp_path):
    manager = ReplicaManager(broker_id=1, log_dir=tmp_path, log_config=LogConfig(), clock=ManualClock(0))
    hosted = manager.get_or_create(TopicPartition("orders", 0))
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(TopicPartition("orders", 0), 1, 1, (1,), 1, (1,)), now_ms=0)
    path = tmp_path / HW_CHECKPOINT_FILE

    manager.write_checkpoints()
    first = path.stat()
    manager.write_checkpoints()
    assert path.stat().st_ino == first.st_ino  # nothing moved: the file was left alone

    batch = encode_batch([(None, b"v", 0)])
    appended = append_produced(hosted, acks=-1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                               fsync=False)
    assert appended.high_watermark_update.current == 1
    manager.write_checkpoints()
    assert path.stat().st_ino != first.st_ino
    assert read_offsets_checkpoint(path) == {("orders", 0): 1}
    manager.close()


def test_a_deleted_replica_is_renamed_aside_at_once_and_removed_in_the_background(tmp_path):
    manager = ReplicaManager(broker_id=1, log_dir=tmp_path, log_config=LogConfig(), clock=ManualClock(0))
    tp = TopicPartition("orders", 3)
    hosted = manager.get_or_create(tp)
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(tp, 1, 1, (1,), 1, (1,)), now_ms=0)
    batch = encode_batch([(None, b"v", 0)])
    append_produced(hosted, acks=1, min_insync_replicas=1, batch=batch, header=validate_batch(batch), fsync=False)
    directory = hosted.log.directory

    hosted.stop(leader_epoch=1, delete=True)
    assert not directory.exists()  # the StopReplica answer need not wait for the files
    wait_for(lambda: not any(tmp_path.iterdir()), "the set-aside directory to be removed")
    again = manager.get_or_create(tp)  # a topic of the same name, created again, starts empty
    assert again.log.directory == directory and again.log.log_end_offset == 0
    manager.close()


def test_a_directory_set_aside_before_a_stop_is_removed_at_the_next_start(tmp_path):
    left = tmp_path / "orders-3.0123456789abcdef-delete"
    left.mkdir()
    (left / "00000000000000000000.log").write_bytes(b"x" * 100)
    manager = ReplicaManager(broker_id=1, log_dir=tmp_path, log_config=LogConfig(), clock=ManualClock(0))
    manager.load()
    assert manager.topic_partitions() == []
    wait_for(lambda: not left.exists(), "the leftover to be removed")
    manager.close()
