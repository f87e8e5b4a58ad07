"""The replica manager's files.

- Checkpoint files are rewritten when an HW or recovery point moved, not otherwise.
- A deleted replica's directory is renamed aside at once and removed in the background; one left
  by a stop is removed at the next start, and never taken for a partition.
- A clean stop leaves the clean-shutdown marker, which the next start takes; after a start without
  it, a log that ends below its checkpointed HW is reported as lost committed records.
"""

from __future__ import annotations

from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log import CLEAN_SHUTDOWN_FILE, LogConfig, LostRecords
from replog.broker.log.checkpoints import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.broker.replicas.leader_side import append_produced
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import encode_batch, validate_batch
from tests.unit.broker.thread_helpers import wait_for


def test_checkpoints_are_rewritten_only_when_they_would_change(tmp_path):
    manager = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    hosted = manager.get_or_create(TopicPartition("orders", 0))
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(TopicPartition("orders", 0), 1, 1, (1,), 1, (1,)), now_ms=0)
    path = tmp_path / HW_CHECKPOINT_FILE

    manager.write_checkpoints()
    first = path.stat()
    manager.write_checkpoints()
    assert path.stat().st_ino == first.st_ino  # nothing moved: the file was left alone

    batch = encode_batch([(None, b"v", 0)])
    appended = append_produced(hosted, acks=-1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                               fsync=False, now_ms=0)
    assert appended.high_watermark_update.current == 1
    manager.write_checkpoints()
    assert path.stat().st_ino != first.st_ino
    assert read_offsets_checkpoint(path) == {("orders", 0): 1}
    manager.close()


def test_a_deleted_replica_is_renamed_aside_at_once_and_removed_in_the_background(tmp_path):
    manager = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    tp = TopicPartition("orders", 3)
    hosted = manager.get_or_create(tp)
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(tp, 1, 1, (1,), 1, (1,)), now_ms=0)
    batch = encode_batch([(None, b"v", 0)])
    append_produced(hosted, acks=1, min_insync_replicas=1, batch=batch, header=validate_batch(batch), fsync=False,
                    now_ms=0)
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
    manager = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    manager.load()
    assert manager.topic_partitions() == []
    wait_for(lambda: not left.exists(), "the leftover to be removed")
    manager.close()


def produce_committed(manager: ReplicaManager, tp: TopicPartition, count: int) -> None:
    hosted = manager.get_or_create(tp)
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(tp, 1, 1, (1,), 1, (1,)), now_ms=0)
    for _ in range(count):
        batch = encode_batch([(None, b"v", 0)])
        append_produced(hosted, acks=-1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                        fsync=False, now_ms=0)
    manager.write_checkpoints(flush_if_due=False)


def test_a_clean_stop_leaves_the_marker_and_the_next_start_takes_it(tmp_path):
    tp = TopicPartition("orders", 0)
    manager = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    manager.load()
    produce_committed(manager, tp, 3)
    manager.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()

    again = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    again.load()
    assert again.clean_start and again.lost_records == []
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is seen as one
    again.close()


def test_after_an_unclean_stop_a_log_below_its_checkpointed_hw_is_reported_as_loss(tmp_path):
    tp = TopicPartition("orders", 0)
    manager = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    manager.load()
    produce_committed(manager, tp, 3)
    segment = manager.get(tp).log.directory / "00000000000000000000.log"
    segment.write_bytes(b"")  # the power went: the unsynced records never reached the disk (no close either)

    again = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=ManualClock(0))
    again.load()
    assert not again.clean_start
    assert again.lost_records == [LostRecords("orders", 0, checkpointed_high_watermark=3, recovered_log_end_offset=0)]
    assert again.lost_records[0].count == 3
    assert again.get(tp).replica.high_watermark == 0
    again.close()


def test_an_unreadable_recovery_point_checkpoint_scans_every_log_instead_of_stopping_the_start(tmp_path):
    manager = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(segment_bytes=200),
                             clock=ManualClock(0))
    tp = TopicPartition("orders", 0)
    hosted = manager.get_or_create(tp)
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(tp, 1, 1, (1,), 1, (1,)), now_ms=0)
    for value in range(10):
        batch = encode_batch([(None, b"value-%d" % value, 0)])
        append_produced(hosted, acks=1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                        fsync=False, now_ms=0)
    manager.close()
    (tmp_path / "recovery-point-offset-checkpoint").write_bytes(b"\xb0 rot\n")

    again = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(segment_bytes=200),
                           clock=ManualClock(0))
    again.load()
    log = again.get(tp).log
    assert log.log_end_offset == 10
    assert log.recovery_report.segments_scanned == tuple(path.name for path in sorted(log.directory.glob("*.log")))
    again.close()
