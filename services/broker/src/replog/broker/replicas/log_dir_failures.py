"""A storage error is final for the log directory (Kafka's LogDirFailureChannel, issue 40).

Theory of operation
-------------------
After a failed write or fsync (EIO, ENOSPC) Linux may already have dropped the dirty pages, so a
second fsync can "succeed" and the recovery point would move past data that never reached the disk.
Nothing is therefore retried: the first OSError on an append, flush or checkpoint takes the directory
offline. From then on it takes no append (leader or follower) and serves no replica fetch, and the
broker is told once (`on_offline`).

Each log directory of the broker has its own `LogDirFailures` (log_dirs.py), shared by the replicas
that live there. What the broker does then is control/offline_dirs.py's: while another directory is
online it keeps serving that one and tells the controller, which moves leadership and ISR membership
of this directory's replicas elsewhere; when the last one fails it halts, as a Kafka broker does (at
once, without a clean-shutdown marker, its ZooKeeper session closed first: runtime/halt.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class LogDirFailures:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = Path(log_dir)
        self._lock = threading.Lock()
        self._offline_reason: str | None = None
        self._on_offline: Callable[[str], None] | None = None

    def connect(self, on_offline: Callable[[str], None]) -> None:
        """What the broker does once the directory goes offline (bootstrap.py); called at most once."""
        self._on_offline = on_offline

    @property
    def offline(self) -> bool:
        return self._offline_reason is not None

    @property
    def offline_reason(self) -> str | None:
        return self._offline_reason

    def failed(self, during: str, exc: OSError) -> None:
        """An OSError while `during` (e.g. "append to orders-0"): the directory is offline from now on."""
        with self._lock:
            if self._offline_reason is not None:
                log.error("log directory %s (offline) failed again during %s: %s", self.log_dir, during, exc)
                return
            self._offline_reason = f"{type(exc).__name__} during {during}: {exc}"
        log.critical("log directory %s is offline: %s; nothing in it is retried, appended or served",
                     self.log_dir, self._offline_reason)
        if self._on_offline is not None:
            self._on_offline(self._offline_reason)
