"""Free space in a log directory (one instance per directory), against a reserve: a full disk refuses
produce before a write fails.

Theory of operation
-------------------
A write that meets ENOSPC takes the directory offline (log_dir_failures.py), and its replicas with it. To
refuse produce with a clear error before that, the checkpointer measures the directory's free space
every round (`refresh`, one statvfs) and a leader refuses a produce while it is below
`log_dir_free_bytes_min` (`shortage`), the same for every partition. The measure is at most a round old,
so the reserve should hold more than a round of produce. Followers still append what their leader took:
refusing them would only leave the ISR short. 0 turns the check off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class LogDirSpace:
    def __init__(self, log_dir: Path, *, free_bytes_min: int = 0,
                 statvfs: Callable[[Path], os.statvfs_result] = os.statvfs) -> None:
        self.log_dir = Path(log_dir)
        self.free_bytes_min = free_bytes_min
        self._statvfs = statvfs
        self._shortage: str | None = None

    def refresh(self) -> None:
        """Measure the free space (a checkpointer chore)."""
        if self.free_bytes_min <= 0:
            return
        try:
            st = self._statvfs(self.log_dir)
        except OSError as exc:  # the directory's own failures are seen by its writes
            log.warning("cannot measure the free space of %s: %s", self.log_dir, exc)
            return
        free_bytes = st.f_bavail * st.f_frsize
        shortage = None
        if free_bytes < self.free_bytes_min:
            shortage = (f"the log directory {self.log_dir} has {free_bytes} bytes free, below the reserve of "
                        f"{self.free_bytes_min} (log_dir_free_bytes_min): produce is refused until space is freed")
        if shortage is not None and self._shortage is None:
            log.error("%s", shortage)
        elif shortage is None and self._shortage is not None:
            log.info("the log directory %s has %d bytes free again: produce is taken", self.log_dir, free_bytes)
        self._shortage = shortage

    def shortage(self) -> str | None:
        """Why produce is refused now; None while there is room."""
        return self._shortage
