"""A log directory that cannot be read at start goes offline; the broker starts on the others (issue 40).

- A damaged HW or log-start checkpoint, a log that cannot be opened or a directory that cannot be listed
  takes that directory offline, with a reason naming the file; the partitions found in it are its offline
  replicas, never hosted, and the other directory's logs are open and served.
- Every directory unusable: start-up stops, naming each one and why.
- A replica of such a directory refuses LeaderAndIsr (and a deleting StopReplica) with STORAGE_ERROR and is
  not created afresh in the online directory; the broker's registration names the directory and replicas.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replog.broker.control.offline_dirs import OfflineDirs
from replog.broker.control.state_changes import ReplicaStateChanges, StopRequest
from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log.checkpoints import HW_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE
from replog.broker.logdirs.log_dirs import DuplicateReplicaError, NoOnlineLogDirError
from replog.broker.runtime.turn import Turn
from replog.common.core.partitions import TopicPartition
from tests.unit.broker.control.test_offline_dirs import Controller, Fetchers, TopicConfigs
from tests.unit.broker.logdirs.test_log_dirs import lead_and_append, manager_over

ON_A = (TopicPartition("orders", 0), TopicPartition("orders", 2))
ON_B = (TopicPartition("orders", 1), TopicPartition("orders", 3))


def two_directories(tmp_path) -> tuple[Path, Path]:
    """Two directories, two replicas with three records each in each, stopped cleanly."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = manager_over(a, b)
    manager.load()
    for tp in sorted(ON_A + ON_B, key=lambda tp: tp.partition):
        lead_and_append(manager, tp, 3)
    manager.close()
    assert all((b / f"{tp.topic}-{tp.partition}").is_dir() for tp in ON_B), "precondition: placement"
    return a, b


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def assert_only_b_offline(manager, b: Path, reason_names: str) -> None:
    first, second = manager.directories
    assert first.online and not second.online
    assert reason_names in second.failures.offline_reason
    assert manager.offline_partitions(second) == list(ON_B)
    assert sorted(manager.topic_partitions()) == list(ON_A)
    for tp in ON_A:  # the online directory's logs are open, with their records and HWs
        hosted = manager.get(tp)
        assert hosted.log.log_end_offset == 3 and hosted.replica.high_watermark == 3
    for tp in ON_B:
        assert manager.get(tp) is None and manager.offline_directory_of(tp) is second


@pytest.mark.parametrize("damaged", [HW_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE])
def test_a_damaged_checkpoint_takes_only_its_directory_offline(tmp_path, damaged, caplog):
    a, b = two_directories(tmp_path)
    flip_a_byte(b / damaged)
    manager = manager_over(a, b)
    with caplog.at_level("CRITICAL"):
        manager.load()
    assert_only_b_offline(manager, b, str(b / damaged))
    assert "CheckpointError" in manager.directories[1].failures.offline_reason
    assert any(r.levelname == "CRITICAL" and str(b) in r.getMessage() for r in caplog.records)
    manager.close()
    assert not (b / ".clean-shutdown").exists(), "nothing is written in an offline directory"


def test_a_log_that_cannot_be_opened_takes_its_directory_offline(tmp_path):
    a, b = two_directories(tmp_path)
    segment = b / "orders-3" / "00000000000000000000.log"
    segment.unlink()
    segment.mkdir()  # a directory where the segment should be: opening it is an OSError
    manager = manager_over(a, b)
    manager.load()
    assert_only_b_offline(manager, b, "orders-3")
    assert "IsADirectoryError" in manager.directories[1].failures.offline_reason
    manager.close()


def test_a_directory_that_cannot_be_listed_goes_offline_with_no_replicas(tmp_path):
    a, _ = two_directories(tmp_path)
    not_a_directory = tmp_path / "c"
    not_a_directory.write_text("a file where a log directory should be")
    manager = manager_over(a, not_a_directory)
    manager.load()
    first, second = manager.directories
    assert first.online and not second.online and str(not_a_directory) in second.failures.offline_reason
    assert manager.offline_partitions(second) == [] and sorted(manager.topic_partitions()) == list(ON_A)
    manager.close()


def test_start_up_stops_when_every_directory_is_unreadable(tmp_path):
    a, b = two_directories(tmp_path)
    flip_a_byte(a / HW_CHECKPOINT_FILE)
    flip_a_byte(b / LOG_START_OFFSET_CHECKPOINT_FILE)
    with pytest.raises(NoOnlineLogDirError) as raised:
        manager_over(a, b).load()
    assert str(a / HW_CHECKPOINT_FILE) in str(raised.value)
    assert str(b / LOG_START_OFFSET_CHECKPOINT_FILE) in str(raised.value)


def test_a_partition_in_two_directories_is_still_refused(tmp_path):
    a, b = two_directories(tmp_path)
    flip_a_byte(b / HW_CHECKPOINT_FILE)
    (b / "orders-0").mkdir()  # a stale copy of a replica of the first directory
    with pytest.raises(DuplicateReplicaError, match="orders-0"):
        manager_over(a, b).load()


def test_a_replica_offline_since_start_is_refused_and_never_created_elsewhere(tmp_path):
    a, b = two_directories(tmp_path)
    flip_a_byte(b / HW_CHECKPOINT_FILE)
    manager = manager_over(a, b)
    manager.load()
    records = []
    offline = OfflineDirs(manager, halt=pytest.fail, record=lambda d, p: records.append((d, p)),
                          controller=Controller(), broker_id=1, broker_epoch_of=lambda: 7)
    offline.connect()
    assert offline.offline_dirs() == (str(b),) and offline.offline_partitions() == ON_B  # the registration's
    changes = ReplicaStateChanges(broker_id=1, replicas=manager, fetchers=Fetchers(), topic_configs=TopicConfigs(),
                                  now_ms=lambda: 0, turn=Turn())
    on_b = ON_B[0]
    decision = LeaderAndIsrDecision(on_b, leader_id=1, leader_epoch=5, isr=(1, 2), partition_epoch=3, replicas=(1, 2))
    (result,) = changes.leader_and_isr([decision], init=False, parent=None)
    assert result.error_code is ErrorCode.STORAGE_ERROR and str(b) in result.message
    assert manager.get(on_b) is None and not (a / f"{on_b.topic}-{on_b.partition}").exists()
    (result,) = changes.stop_replicas([StopRequest(on_b, 5, delete=True)])
    assert result.error_code is ErrorCode.STORAGE_ERROR and (b / f"{on_b.topic}-{on_b.partition}").is_dir()
    offline.stop()
    manager.close()
