"""The replica manager's checkpoint files: rewritten when an HW or recovery point moved, not otherwise."""

from __future__ import annotations

from replog.broker.adapters.leader_side import append_produced
from replog.broker.adapters.replica_manager import ReplicaManager
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.core.topic_partition import TopicPartition
from replog.broker.log import LogConfig
from replog.broker.log.checkpoints import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.common.clock import ManualClock
from replog.common.records import encode_batch, validate_batch


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
