"""What the broker does when a log directory goes offline (control/offline_dirs.py).

- Another directory is online: the registration records the offline directory and its replicas, and the
  controller is told (again until it accepts); the broker does not halt.
- The last online directory fails: the broker halts.
- A replica in an offline directory refuses LeaderAndIsr and a deleting StopReplica with STORAGE_ERROR.
"""

from __future__ import annotations

import errno

from replog.broker.control.offline_dirs import OfflineDirs
from replog.broker.control.state_changes import ReplicaStateChanges, StopRequest
from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log import LogConfig
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.broker.runtime.turn import Turn
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from tests.unit.broker.thread_helpers import wait_for


class Controller:
    """Refuses the first report (a controller being elected), accepts the next."""

    def __init__(self) -> None:
        self.reports: list[tuple] = []

    def log_dirs_offline(self, broker_id, broker_epoch, dirs, partitions):
        self.reports.append((broker_id, broker_epoch, tuple(dirs), tuple(partitions)))
        if len(self.reports) == 1:
            return ErrorCode.NOT_CONTROLLER, "not yet"
        return ErrorCode.NONE, ""


def broker_with_two_dirs(tmp_path):
    replicas = ReplicaManager(broker_id=1, log_dirs=[tmp_path / "a", tmp_path / "b"], log_config=LogConfig(),
                              clock=ManualClock(0))
    replicas.load()
    for partition in range(4):  # two in each directory
        replicas.get_or_create(TopicPartition("orders", partition))
    halts, records, controller = [], [], Controller()
    offline = OfflineDirs(replicas, halt=halts.append, record=lambda d, p: records.append((d, p)),
                          controller=controller, broker_id=1, broker_epoch_of=lambda: 77)
    offline.connect()
    return replicas, offline, halts, records, controller


def test_a_failed_directory_is_recorded_and_reported_while_the_broker_keeps_the_other(tmp_path):
    replicas, offline, halts, records, controller = broker_with_two_dirs(tmp_path)
    a, b = replicas.directories
    on_b = tuple(replicas.offline_partitions(b))
    b.failures.failed("an append to orders-1", OSError(errno.EIO, "Input/output error"))
    wait_for(lambda: len(controller.reports) == 2, "the report to be repeated until accepted")
    assert controller.reports[-1] == (1, 77, (str(b.path),), on_b)
    assert records[-1] == ((str(b.path),), on_b)
    assert offline.offline_dirs() == (str(b.path),) and offline.offline_partitions() == on_b
    assert not halts and a.online
    offline.stop()
    replicas.close()


def test_the_last_online_directory_failing_halts_the_broker(tmp_path):
    replicas, offline, halts, _, controller = broker_with_two_dirs(tmp_path)
    a, b = replicas.directories
    b.failures.failed("a flush", OSError(errno.EIO, "Input/output error"))
    wait_for(lambda: len(controller.reports) == 2, "the first directory's report")
    a.failures.failed("a checkpoint", OSError(errno.ENOSPC, "No space left on device"))
    assert len(halts) == 1 and "No space left" in halts[0]
    offline.stop()


class Fetchers:
    def __init__(self) -> None:
        self.added, self.removed = [], []

    def add(self, partitions, *args, **kwargs):
        self.added.extend(partitions)

    def remove(self, partitions):
        self.removed.extend(partitions)


class TopicConfigs:
    def watch(self, topic):
        pass

    def fsync_each_append(self, topic):
        return False

    def min_insync_replicas(self, topic):
        return 1


def test_a_replica_in_an_offline_directory_neither_follows_nor_is_deleted_until_a_restart(tmp_path):
    replicas, offline, _, _, _ = broker_with_two_dirs(tmp_path)
    a, b = replicas.directories
    (on_b, *_) = replicas.offline_partitions(b)
    b.failures.failed("a flush", OSError(errno.EIO, "Input/output error"))
    changes = ReplicaStateChanges(broker_id=1, replicas=replicas, fetchers=Fetchers(), topic_configs=TopicConfigs(),
                                  now_ms=lambda: 0, turn=Turn())
    decision = LeaderAndIsrDecision(on_b, leader_id=2, leader_epoch=5, isr=(2, 1), partition_epoch=3, replicas=(1, 2))
    (result,) = changes.leader_and_isr([decision], init=False, parent=None)
    assert result.error_code is ErrorCode.STORAGE_ERROR and "offline log directory" in result.message
    (result,) = changes.stop_replicas([StopRequest(on_b, 5, delete=True)])
    assert result.error_code is ErrorCode.STORAGE_ERROR and replicas.get(on_b).log.directory.is_dir()
    offline.stop()
