"""Several log directories per broker (issue 40).

- A new replica goes to the online directory with the fewest replicas; never to an offline one.
- Each directory keeps its own checkpoint files (naming only its replicas) and clean-shutdown marker;
  a start scans every directory and refuses a partition found in two.
- A storage error in one directory takes only that directory offline: the others are still
  checkpointed, and a stop marks only them clean.
"""

from __future__ import annotations

import errno

import pytest

from replog.broker.config import BrokerConfig, log_dir_list, log_directories
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log import CLEAN_SHUTDOWN_FILE, LogConfig
from replog.broker.log.checkpoints import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.broker.replicas.leader_side import append_produced
from replog.broker.logdirs.log_dirs import DuplicateReplicaError, LogDirectory, place
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import encode_batch, validate_batch


def manager_over(*dirs) -> ReplicaManager:
    return ReplicaManager(broker_id=1, log_dirs=list(dirs), log_config=LogConfig(), clock=ManualClock(0))


def lead_and_append(manager: ReplicaManager, tp: TopicPartition, records: int):
    hosted = manager.get_or_create(tp)
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(tp, 1, 1, (1,), 1, (1,)), now_ms=0)
    for _ in range(records):
        batch = encode_batch([(None, b"v", 0)])
        append_produced(hosted, acks=-1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                        fsync=False, now_ms=0)
    return hosted


def test_placement_takes_the_online_directory_with_the_fewest_replicas(tmp_path):
    first, second, third = (LogDirectory(tmp_path / name) for name in ("a", "b", "c"))
    assert place([first, second, third], {}) is first  # a tie: the first listed
    assert place([first, second, third], {first.path: 2, second.path: 1, third.path: 1}) is second
    second.failures.failed("a test", OSError(errno.EIO, "EIO"))
    assert place([first, second, third], {first.path: 2, second.path: 0, third.path: 1}) is third
    first.failures.failed("a test", OSError(errno.EIO, "EIO"))
    third.failures.failed("a test", OSError(errno.EIO, "EIO"))
    assert place([first, second, third], {}) is None


def test_new_replicas_spread_over_the_directories_and_each_checkpoints_only_its_own(tmp_path):
    manager = manager_over(tmp_path / "a", tmp_path / "b")
    manager.load()
    placed = {tp: lead_and_append(manager, tp, 2).log.directory.parent
              for tp in (TopicPartition("orders", p) for p in range(4))}
    assert sorted(placed.values()).count(tmp_path / "a") == 2 and sorted(placed.values()).count(tmp_path / "b") == 2
    manager.write_checkpoints()
    for name in ("a", "b"):
        named = read_offsets_checkpoint(tmp_path / name / HW_CHECKPOINT_FILE)
        assert named == {(tp.topic, tp.partition): 2 for tp, parent in placed.items() if parent == tmp_path / name}
    manager.close()
    assert (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists() and (tmp_path / "b" / CLEAN_SHUTDOWN_FILE).exists()

    again = manager_over(tmp_path / "a", tmp_path / "b")
    again.load()  # every directory is scanned; each replica finds its HW in its own directory's file
    assert again.clean_start
    for tp, parent in placed.items():
        hosted = again.get(tp)
        assert hosted.log.directory.parent == parent and hosted.replica.high_watermark == 2
    again.close()


def test_a_single_directory_keeps_its_files_where_they_were(tmp_path):
    manager = manager_over(tmp_path)
    manager.load()
    lead_and_append(manager, TopicPartition("orders", 0), 1)
    manager.close()
    assert read_offsets_checkpoint(tmp_path / HW_CHECKPOINT_FILE) == {("orders", 0): 1}
    assert (tmp_path / "orders-0").is_dir() and (tmp_path / CLEAN_SHUTDOWN_FILE).exists()


def test_a_partition_found_in_two_directories_stops_the_start(tmp_path):
    (tmp_path / "a" / "orders-0").mkdir(parents=True)
    (tmp_path / "b" / "orders-0").mkdir(parents=True)
    with pytest.raises(DuplicateReplicaError, match="orders-0"):
        manager_over(tmp_path / "a", tmp_path / "b").load()


def test_a_storage_error_takes_only_its_directory_offline(tmp_path):
    manager = manager_over(tmp_path / "a", tmp_path / "b")
    manager.load()
    on_a = lead_and_append(manager, TopicPartition("orders", 0), 1)
    on_b = lead_and_append(manager, TopicPartition("orders", 1), 1)
    assert on_a.log.directory.parent == tmp_path / "a" and on_b.log.directory.parent == tmp_path / "b"
    manager.write_checkpoints()

    def failing(**_):
        raise OSError(errno.EIO, "Input/output error")

    on_a.checkpoint_offsets = failing  # the disk under a fails its next flush
    lead_and_append(manager, TopicPartition("orders", 1), 2)
    manager.write_checkpoints()
    a, b = manager.directories
    assert not a.online and b.online
    assert "EIO" in a.failures.offline_reason or "Input/output" in a.failures.offline_reason
    assert read_offsets_checkpoint(tmp_path / "b" / HW_CHECKPOINT_FILE) == {("orders", 1): 3}
    assert manager.offline_partitions(a) == [TopicPartition("orders", 0)]
    created = manager.get_or_create(TopicPartition("audit", 0))  # only the online directory takes new ones
    assert created.log.directory.parent == tmp_path / "b"
    manager.close()
    assert not (tmp_path / "a" / CLEAN_SHUTDOWN_FILE).exists()  # its next start recovers it
    assert (tmp_path / "b" / CLEAN_SHUTDOWN_FILE).exists()


def test_log_dirs_replaces_log_dir_and_is_validated(tmp_path):
    assert log_directories(BrokerConfig(log_dir=str(tmp_path))) == [tmp_path]
    config = BrokerConfig(log_dir="ignored", log_dirs=f"{tmp_path}/a, {tmp_path}/b")
    assert log_directories(config) == [tmp_path / "a", tmp_path / "b"]
    assert log_dir_list("/x,,/y") == "an empty entry in the comma-separated list"
    assert log_dir_list("/x,/x") == "a directory listed twice"
    assert log_dir_list("") is None and log_dir_list("/x,/y") is None


def test_a_strict_checkpoint_raises_the_error_after_writing_the_other_directories(tmp_path):
    manager = manager_over(tmp_path / "a", tmp_path / "b")
    manager.load()
    on_a = lead_and_append(manager, TopicPartition("orders", 0), 1)
    lead_and_append(manager, TopicPartition("orders", 1), 1)

    def failing(**_):
        raise OSError(errno.ENOSPC, "No space left on device")

    on_a.checkpoint_offsets = failing
    with pytest.raises(OSError, match="No space left"):
        manager.write_checkpoints(strict=True)  # AdvanceLogStartOffset answers that it is not durable
    assert read_offsets_checkpoint(tmp_path / "b" / HW_CHECKPOINT_FILE) == {("orders", 1): 1}
    assert not manager.directories[0].online
    manager.close()
