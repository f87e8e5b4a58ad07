"""The clean-shutdown marker of a log directory, and what recovery found against the HW checkpoint.

Theory of operation (KIP-966's unclean-shutdown detection, smallest form):

A broker that stops cleanly flushes every log, writes its checkpoints and then
creates `.clean-shutdown` in its log directory, durably. At start it notes
whether the marker is there and removes it (durably) before it changes anything,
so a crash or a power loss at any later point leaves no marker behind.

Without the marker, what was not fsynced may be gone. A replica whose recovered
log end is below its checkpointed high watermark has lost records that were
committed: `lost_committed_records` says which and how many, and the broker
reports them instead of clamping the HW in silence. Records acknowledged after
the last HW checkpoint leave no trace on disk and cannot be counted this way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .checkpoints import create_marker_file, fsync_directory

CLEAN_SHUTDOWN_FILE = ".clean-shutdown"


@dataclass(frozen=True)
class LostRecords:
    """Committed records a replica's log no longer holds after recovery."""

    topic: str
    partition: int
    checkpointed_high_watermark: int
    recovered_log_end_offset: int

    @property
    def count(self) -> int:
        return self.checkpointed_high_watermark - self.recovered_log_end_offset


def take_clean_shutdown_marker(log_dir: Path) -> bool:
    """True if the last stop was clean (or the directory is empty: a new broker has nothing to lose);
    the marker is gone (durably) when this returns."""
    marker = Path(log_dir) / CLEAN_SHUTDOWN_FILE
    if not marker.exists():
        return not any(Path(log_dir).iterdir())
    marker.unlink()
    fsync_directory(Path(log_dir))
    return True


def write_clean_shutdown_marker(log_dir: Path) -> None:
    """Mark a clean stop: call after every log is flushed and the checkpoints are written."""
    create_marker_file(Path(log_dir) / CLEAN_SHUTDOWN_FILE)


def lost_committed_records(topic: str, partition: int, checkpointed_high_watermark: int,
                           recovered_log_end_offset: int) -> LostRecords | None:
    if recovered_log_end_offset >= checkpointed_high_watermark:
        return None
    return LostRecords(topic, partition, checkpointed_high_watermark, recovered_log_end_offset)
