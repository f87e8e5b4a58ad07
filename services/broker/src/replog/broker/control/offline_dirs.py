"""What the broker does when one of its log directories goes offline (issue 40).

Theory of operation
-------------------
Each log directory has its own storage-error channel (logdirs/log_dir_failures.py); its replicas
already refuse every append and serve no fetch from the moment it is offline. What is left is the
broker's side, decided here once per directory on a thread of its own (the failed write may hold a
partition's lock):

* no directory is online any more: the broker halts, as before (runtime/halt.py);
* another one is: the broker keeps serving those. It records the offline directories and the replicas
  that lived in them in its registration (`/brokers/ids/<id>`, so a newly elected controller knows
  them too), then tells the active controller (`LogDirsOffline`), which takes those replicas out of
  every ISR, elects other leaders and does not make them leader again while the broker's registration
  stands. The call is repeated, `RETRY_BACKOFF_S` apart, until the controller accepts it or the broker
  stops; a new registration (after a restart or a session expiry) carries the offline set again.

A directory can also be offline from the start (logdirs/directory_load.py: it could not be read). Its
replicas are recorded when this is connected, before the broker registers, so the first registration
names them and the controller loads them with the broker, as a newly elected controller would: there is
nothing to report by RPC.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from replog.broker.control.controller_link import ControllerLink, ControllerUnavailable
from replog.broker.core.errors import ErrorCode
from replog.broker.logdirs.log_dir_failures import halts_broker
from replog.broker.logdirs.log_dirs import LogDirectory
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.5


class OfflineDirs:
    def __init__(self, replicas: ReplicaManager, *, halt: Callable[[str], None],
                 record: Callable[[tuple[str, ...], tuple[TopicPartition, ...]], None],
                 controller: ControllerLink, broker_id: int, broker_epoch_of: Callable[[], int],
                 on_change: Callable[[], None] = lambda: None) -> None:
        self._replicas = replicas
        self._halt = halt
        self._record = record  # rewrites the registration with the offline dirs and replicas
        self._controller = controller
        self._broker_id = broker_id
        self._broker_epoch_of = broker_epoch_of
        self._on_change = on_change
        self._lock = threading.Lock()
        self._partitions: set[TopicPartition] = set()
        self._stopping = threading.Event()
        self._pending = threading.Event()  # a report the controller has not accepted yet
        self._reporter: threading.Thread | None = None

    def connect(self) -> None:
        """Follow each directory's failures; one already offline (it could not be read at start) is recorded
        with its replicas at once, for the broker's first registration to name them."""
        for directory in self._replicas.directories:
            directory.failures.connect(lambda reason, d=directory: self._went_offline(d, reason))
            if not directory.online:
                partitions = self._replicas.offline_partitions(directory)
                log.error("log directory %s was offline at start (%s): its %d replicas stay offline until it is "
                          "repaired and the broker restarted", directory.path, directory.failures.offline_reason,
                          len(partitions))
                with self._lock:
                    self._partitions.update(partitions)

    def stop(self) -> None:
        self._stopping.set()

    def offline_dirs(self) -> tuple[str, ...]:
        return tuple(str(d.path) for d in self._replicas.directories if not d.online)

    def offline_partitions(self) -> tuple[TopicPartition, ...]:
        with self._lock:
            return tuple(sorted(self._partitions))

    def _went_offline(self, directory: LogDirectory, reason: str) -> None:
        """LogDirFailures' callback: may run holding a partition's lock, so it only starts work."""
        self._on_change()
        if halts_broker(d.online for d in self._replicas.directories):
            self._halt(reason)
            return
        threading.Thread(target=self._take_offline, args=(directory, reason), name="log-dir-offline",
                         daemon=True).start()

    def _take_offline(self, directory: LogDirectory, reason: str) -> None:
        partitions = self._replicas.offline_partitions(directory)
        log.error("log directory %s is offline (%s): %d replicas stop there; the broker keeps serving %s",
                  directory.path, reason, len(partitions),
                  ", ".join(str(d.path) for d in self._replicas.directories if d.online))
        with self._lock:
            self._partitions.update(partitions)
        self._pending.set()
        with self._lock:
            if self._reporter is None or not self._reporter.is_alive():
                self._reporter = threading.Thread(target=self._report_until_accepted, name="log-dir-report",
                                                  daemon=True)
                self._reporter.start()

    def _report_until_accepted(self) -> None:
        while self._pending.is_set() and not self._stopping.is_set():
            self._pending.clear()
            dirs, partitions = self.offline_dirs(), self.offline_partitions()
            while not self._stopping.is_set():
                if self._report_once(dirs, partitions):
                    break
                self._stopping.wait(RETRY_BACKOFF_S)

    def _report_once(self, dirs: tuple[str, ...], partitions: tuple[TopicPartition, ...]) -> bool:
        try:
            self._record(dirs, partitions)
            error_code, message = self._controller.log_dirs_offline(self._broker_id, self._broker_epoch_of(),
                                                                    dirs, partitions)
        except ControllerUnavailable as exc:
            log.info("cannot report offline log directories yet: %s", exc)
            return False
        except Exception as exc:  # noqa: BLE001 - ZooKeeper unreachable or the like: logged, tried again
            log.warning("cannot report offline log directories yet: %s", exc)
            return False
        if error_code is ErrorCode.NONE:
            log.info("the controller took %d replicas in %s offline", len(partitions), ", ".join(dirs))
            return True
        log.info("the controller refused the offline log directories (will ask again): %s %s", error_code.name,
                 message)
        return False
