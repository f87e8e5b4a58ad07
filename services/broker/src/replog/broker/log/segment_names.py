"""Segment file names (`<base_offset>.log`, `.index`, the compacted-log marker) and what recovering one segment
found."""

from __future__ import annotations

from dataclasses import dataclass

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
# The log cleaner's files (cleaner.py): `<segment>.log.cleaned` is a rewrite being written (a leftover
# is discarded), `<segment>.log.swap` one decided on (a leftover replaces its segment at recovery).
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
# Present in a partition directory once the log may hold offset gaps the cleaner left (or a leader's cleaner
# left, for a follower): made durable before the first one, never removed. The topic's current
# cleanup.policy cannot say so: it may have changed since, and at start-up logs open before it is known.
COMPACTED_MARKER_FILE = "compacted-log"


def segment_file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(name: str) -> int | None:
    """The base offset of a `<20 digits>.log` name; None for any other file."""
    stem, dot, suffix = name.partition(".")
    if dot and "." + suffix == LOG_SUFFIX and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


@dataclass(frozen=True)
class SegmentRecovery:
    """What recovering one segment found: where the valid data ends, and why."""

    batches_scanned: int
    bytes_dropped: int
    reason: str | None
    # (leader_epoch, base_offset) wherever the batches' leader epoch went up
    leader_epoch_starts: tuple[tuple[int, int], ...]
