"""A stalled disk is a failed disk: a probe fsyncs a small file in the log directory and takes the
directory offline when an fsync does not return in time (issue 40).

Theory of operation
-------------------
A disk can stop answering without failing: every fsync blocks, produce waits on the partition's lock,
and the broker keeps its ZooKeeper session, so the controller sees nothing wrong and leadership never
moves. The probe runs on a thread of its own: every `interval_ms` it writes, fsyncs and removes
`.fsync-probe` on a second thread and waits `stall_max_ms` for it. An fsync that takes longer is a
storage error (ETIMEDOUT) for that directory's `LogDirFailures` (one probe per directory), which takes it
offline, so another replica leads its partitions. A
probe that fails with an OSError is one too. A process paused as a whole (SIGSTOP) may find the deadline
passed when it resumes with the fsync about to return, so the probe looks once more, a second later,
before it judges. The probe's own thread may stay blocked in the stalled
fsync; it is a daemon and the broker is stopping.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path

from replog.broker.logdirs.log_dir_failures import LogDirFailures

log = logging.getLogger(__name__)

PROBE_FILE = ".fsync-probe"
RESUME_GRACE_S = 1.0


class FsyncProbe:
    def __init__(self, failures: LogDirFailures, *, interval_ms: int, stall_max_ms: int) -> None:
        self._failures = failures
        self._interval_ms = interval_ms
        self._stall_max_ms = stall_max_ms
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fsync-probe", daemon=True)

    def start(self) -> None:
        if self._stall_max_ms > 0:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._stall_max_ms / 1000 + 1)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_ms / 1000):
            if self._failures.offline:
                return
            error = self.probe_once()
            if error is not None and not self._stop.is_set():
                self._failures.failed("the fsync probe", error)  # out of descriptors: noted, probed again

    def probe_once(self) -> OSError | None:
        """One probe: None when the fsync returned in time, else the error to report."""
        outcome: list[OSError | None] = []
        worker = threading.Thread(target=lambda: outcome.append(_write_and_fsync(self._failures.log_dir)),
                                  name="fsync-probe-io", daemon=True)
        worker.start()
        worker.join(self._stall_max_ms / 1000)
        if not outcome:  # a pause of the whole process (SIGSTOP) may have used the deadline up: one more look
            worker.join(RESUME_GRACE_S)
        if not outcome:
            return OSError(errno.ETIMEDOUT, f"an fsync in {self._failures.log_dir} did not return within "
                                            f"{self._stall_max_ms} ms (log_dir_fsync_stall_max_ms)")
        return outcome[0]


def _write_and_fsync(log_dir: Path) -> OSError | None:
    path = log_dir / PROBE_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"probe\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        path.unlink()  # an idle, empty log directory stays empty (clean_shutdown.py counts it as clean)
    except OSError as exc:
        return exc
    return None
