"""The broker's log directories (Kafka's `log.dirs`): where a new replica goes, and what each directory owns.

Theory of operation
-------------------
A broker may keep its replicas in several directories, typically one per disk, so that one failed disk
costs it only the replicas on that disk (issue 40). Each `LogDirectory` owns what Kafka keeps per
directory: its storage-error channel (log_dir_failures.py), its free-space reserve (log_dir_space.py),
its clean-shutdown marker and its three checkpoint files (HW, recovery point, log start), which name
only the replicas that live in it. A replica lives in exactly one directory: start-up refuses a
partition found in two. A directory whose files cannot be read at start goes offline then, and the broker
starts on the others (directory_load.py); with none left it does not start.

A new replica goes to the online directory that holds the fewest replicas (the first listed on a tie),
as Kafka places them; `place` decides that from counts alone. Once a directory is offline nothing is
written there again by this process, checkpoints and the clean-shutdown marker included: its next start
recovers its logs from their recovery points.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from replog.broker.log import (
    HW_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    CheckpointError,
    read_offsets_checkpoint,
    write_offsets_checkpoint,
)
from replog.broker.logdirs.log_dir_failures import LogDirFailures
from replog.broker.logdirs.log_dir_space import LogDirSpace

log = logging.getLogger(__name__)

# (topic, partition) -> (high watermark, recovery point, log start offset)
Offsets = dict[tuple[str, int], tuple[int, int, int]]


class DuplicateReplicaError(Exception):
    """A partition's directory exists in two log directories: which copy is current cannot be known."""


class NoOnlineLogDirError(Exception):
    """Every log directory went offline at start (directory_load.py): the broker has nowhere to keep a replica."""


class LogDirectory:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.failures = LogDirFailures(self.path)  # bootstrap.py says what an offline directory stops
        self.space = LogDirSpace(self.path)  # bootstrap.py sets its reserve; the checkpointer measures
        self._checkpointed: Offsets | None = None  # as last written

    @property
    def online(self) -> bool:
        return not self.failures.offline

    def read_checkpoints(self) -> tuple[dict, dict, dict]:
        """(high watermarks, recovery points, log starts) as last written here. An unreadable HW or
        log-start file raises CheckpointError; an unreadable recovery-point file only makes every log of
        this directory recover from its first segment."""
        high_watermarks = read_offsets_checkpoint(self.path / HW_CHECKPOINT_FILE)
        try:
            recovery_points = read_offsets_checkpoint(self.path / RECOVERY_POINT_CHECKPOINT_FILE)
        except CheckpointError as exc:
            log.error("recovering every log in %s from its first segment: %s", self.path, exc)
            recovery_points = {}
        log_starts = read_offsets_checkpoint(self.path / LOG_START_OFFSET_CHECKPOINT_FILE)
        return high_watermarks, recovery_points, log_starts

    def write_checkpoints(self, offsets: Offsets) -> None:
        """Rewrite the three files for the replicas of this directory, unless they already say it
        (an OSError is the caller's to report)."""
        if offsets == self._checkpointed:
            return
        write_offsets_checkpoint(self.path / HW_CHECKPOINT_FILE, {k: v[0] for k, v in offsets.items()})
        write_offsets_checkpoint(self.path / RECOVERY_POINT_CHECKPOINT_FILE, {k: v[1] for k, v in offsets.items()})
        write_offsets_checkpoint(self.path / LOG_START_OFFSET_CHECKPOINT_FILE, {k: v[2] for k, v in offsets.items()})
        self._checkpointed = offsets


def build_directories(paths: Sequence[Path]) -> tuple[LogDirectory, ...]:
    resolved = [Path(path) for path in paths]
    assert resolved, "a broker needs at least one log directory"
    assert len({p.resolve() for p in resolved}) == len(resolved), f"log directories listed twice: {resolved}"
    return tuple(LogDirectory(path) for path in resolved)


def place(directories: Sequence[LogDirectory], replica_counts: Mapping[Path, int]) -> LogDirectory | None:
    """The online directory with the fewest replicas, the first listed on a tie; None when all are offline."""
    online = [d for d in directories if d.online]
    if not online:
        return None
    return min(online, key=lambda d: replica_counts.get(d.path, 0))
