"""Stopping the broker at once when its storage failed (logdirs/log_dir_failures.py).

A broker whose last online log directory went offline has nothing left to serve (control/offline_dirs.py).
It does not stop cleanly:
a clean stop would flush and checkpoint through the failed disk and leave a clean-shutdown marker.
It ends its ZooKeeper session (so its registration goes now, and the controller elects other leaders
without waiting for the session to time out) and exits with `EXIT_LOG_DIR_OFFLINE`, as Kafka halts.
If ZooKeeper does not answer within `ZOOKEEPER_CLOSE_WAIT_S`, it exits all the same.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

EXIT_LOG_DIR_OFFLINE = 3
ZOOKEEPER_CLOSE_WAIT_S = 5.0

log = logging.getLogger(__name__)


def halt_on_offline_dir(end_zookeeper_session: Callable[[], None]) -> Callable[[str], None]:
    """The callback for `LogDirFailures.connect`: starts the halt on a thread of its own and returns,
    so the caller (holding a partition's lock) answers its request meanwhile."""

    def halt(reason: str) -> None:
        log.critical("stopping the broker: its only log directory is offline (%s); exit code %d",
                     reason, EXIT_LOG_DIR_OFFLINE)
        closer = threading.Thread(target=end_zookeeper_session, name="halt-zookeeper", daemon=True)
        closer.start()
        closer.join(ZOOKEEPER_CLOSE_WAIT_S)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(EXIT_LOG_DIR_OFFLINE)

    def start(reason: str) -> None:
        threading.Thread(target=halt, args=(reason,), name="log-dir-offline", daemon=True).start()

    return start
