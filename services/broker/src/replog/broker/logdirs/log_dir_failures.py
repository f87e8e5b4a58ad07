"""A storage error is final for the log directory (Kafka's LogDirFailureChannel, issue 40).

Theory of operation
-------------------
After a failed write or fsync (EIO, ENOSPC) Linux may already have dropped the dirty pages, so a
second fsync can "succeed" and the recovery point would move past data that never reached the disk.
Nothing is therefore retried: the first OSError on an append, flush or checkpoint takes the directory
offline. From then on it takes no append (leader or follower) and serves no replica fetch, and the
broker is told once (`on_offline`). At start the same holds for a directory that cannot be listed, a
log in it that cannot be opened, or an HW or log-start checkpoint that cannot be read
(logdirs/directory_load.py): it is offline before the broker serves anything, and `on_offline` is not
connected yet; control/offline_dirs.py picks such directories up when it is.

Each log directory of the broker has its own `LogDirFailures` (log_dirs.py), shared by the replicas
that live there. What the broker does then is control/offline_dirs.py's: while another directory is
online it keeps serving that one and tells the controller, which moves leadership and ISR membership
of this directory's replicas elsewhere; when the last one fails it halts, as a Kafka broker does (at
once, without a clean-shutdown marker, its ZooKeeper session closed first: runtime/halt.py).

Running out of file descriptors (EMFILE for the process, ENFILE for the system) is not a storage error:
it comes from an `open` (or `dup`) that failed, so nothing was written and no dirty page was lost. The
directory stays online; the append is answered with a retriable error (`out_of_descriptors_message`),
a checkpoint round or a follower's fetch simply comes again, and a log line (at most one per
SHORTAGE_LOG_INTERVAL_S) and a counter (`on_descriptor_shortage`) say the broker is out of descriptors.
The descriptor budget (log/descriptors.py) is what keeps this rare.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

DESCRIPTOR_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})
SHORTAGE_LOG_INTERVAL_S = 10.0


def is_out_of_descriptors(exc: OSError) -> bool:
    """True for EMFILE / ENFILE: an open that failed, with nothing written."""
    return exc.errno in DESCRIPTOR_ERRNOS


class LogDirFailures:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = Path(log_dir)
        self._lock = threading.Lock()
        self._offline_reason: str | None = None
        self._on_offline: Callable[[str], None] | None = None
        self.on_descriptor_shortage: Callable[[], None] = lambda: None  # bootstrap.py counts them in a metric
        self.descriptor_shortages = 0
        self._shortage_logged_s = float("-inf")
        self._shortages_unlogged = 0

    def connect(self, on_offline: Callable[[str], None]) -> None:
        """What the broker does once the directory goes offline (bootstrap.py); called at most once."""
        self._on_offline = on_offline

    @property
    def offline(self) -> bool:
        return self._offline_reason is not None

    @property
    def offline_reason(self) -> str | None:
        return self._offline_reason

    def failed(self, during: str, exc: Exception) -> None:
        """An OSError while `during` (e.g. "append to orders-0"), or at start a checkpoint that cannot be
        read (directory_load.py): the directory is offline from now on, unless the error is EMFILE / ENFILE
        (see the module docstring), which is only noted."""
        if isinstance(exc, OSError) and is_out_of_descriptors(exc):
            self._note_shortage(during, exc)
            return
        with self._lock:
            if self._offline_reason is not None:
                log.error("log directory %s (offline) failed again during %s: %s", self.log_dir, during, exc)
                return
            self._offline_reason = f"{type(exc).__name__} during {during}: {exc}"
        log.critical("log directory %s is offline: %s; nothing in it is retried, appended or served",
                     self.log_dir, self._offline_reason)
        if self._on_offline is not None:
            self._on_offline(self._offline_reason)

    def _note_shortage(self, during: str, exc: OSError) -> None:
        now_s = time.monotonic()
        with self._lock:
            self.descriptor_shortages += 1
            self._shortages_unlogged += 1
            due = now_s - self._shortage_logged_s >= SHORTAGE_LOG_INTERVAL_S
            if due:
                self._shortage_logged_s, count, self._shortages_unlogged = now_s, self._shortages_unlogged, 0
        self.on_descriptor_shortage()
        if due:
            log.error("out of file descriptors during %s: %s (%d such failures since the last report; nothing was "
                      "written, the operation is retried; the log directory stays online)", during, exc, count)

    def storage_error_message(self, exc: OSError) -> str:
        """What a client is told after `failed(..., exc)`: the directory is offline, or out of descriptors."""
        if is_out_of_descriptors(exc) and not self.offline:
            return out_of_descriptors_message(exc)
        return (f"the log directory {self.log_dir} is offline after a storage error "
                f"({self.offline_reason}); another replica takes over")


def halts_broker(directories_online: Iterable[bool]) -> bool:
    """Whether a directory going offline stops the broker (control/offline_dirs.py asks): when none of its
    directories is online any more, it has nothing left to serve. The replication simulation's brokers,
    one directory each, ask too (tests/scenario/broker)."""
    return not any(directories_online)


def out_of_descriptors_message(exc: OSError) -> str:
    return f"the broker is out of file descriptors ({exc.strerror}); nothing was written, retry"
