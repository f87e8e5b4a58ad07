"""Start-up recovery of a partition log (validate the tail, cut a torn one).

Theory of operation
-------------------
Data below the recovery point was fsynced before the broker last recorded
that point, and a segment is fsynced when it is rolled, so only segments
from the one holding the recovery point (by default just the active one)
can hold a torn write. Each of those is scanned batch by batch (length, CRC,
contiguous offsets); at the first incomplete or corrupt batch the file is
cut and every later segment deleted (newest first, so a crash mid-way still
leaves a prefix of the log). The scan also rebuilds the segment's index and
reports where the leader epoch went up, so the epoch cache can be repaired.

Older segments are not scanned: their index is loaded and sanity-checked,
and rebuilt from the segment if missing or inconsistent.
"""

from __future__ import annotations

import bisect
import logging

from .results import RecoveryReport
from .segment import LogSegment

logger = logging.getLogger(__name__)


def recover_segments(
    segments: list[LogSegment], recovery_point: int | None
) -> tuple[list[LogSegment], RecoveryReport, list[tuple[int, int]]]:
    """Recover `segments` (sorted by base offset, at least one).

    Returns the surviving segments, the report, and the (leader_epoch,
    start_offset) changes seen in the scanned batches.
    """
    assert segments
    bases = [segment.base_offset for segment in segments]
    if recovery_point is None:
        first_scanned = len(segments) - 1
    else:
        first_scanned = min(max(bisect.bisect_right(bases, recovery_point) - 1, 0), len(segments) - 1)

    indexes_rebuilt = []
    for i in range(first_scanned):
        segments[i].next_offset = segments[i + 1].base_offset
        if segments[i].load_index():
            indexes_rebuilt.append(segments[i].index_path.name)

    scanned, leader_epoch_starts = [], []
    batches_scanned, bytes_dropped = 0, 0
    truncated_segment, reason, deleted = None, None, []
    for i in range(first_scanned, len(segments)):
        segment = segments[i]
        outcome = segment.recover()
        segment.flush()  # what we read back may still be only in the page cache
        scanned.append(segment.name)
        batches_scanned += outcome.batches_scanned
        leader_epoch_starts.extend(outcome.leader_epoch_starts)
        if outcome.bytes_dropped:
            truncated_segment, reason, bytes_dropped = segment.name, outcome.reason, outcome.bytes_dropped
            for later in reversed(segments[i + 1 :]):
                bytes_dropped += later.size_bytes
                deleted.append(later.name)
                later.delete()
            segments = segments[: i + 1]
            break

    report = RecoveryReport(
        segment=truncated_segment,
        bytes_dropped=bytes_dropped,
        reason=reason,
        segments_scanned=tuple(scanned),
        batches_scanned=batches_scanned,
        segments_deleted=tuple(reversed(deleted)),
        indexes_rebuilt=tuple(indexes_rebuilt),
    )
    directory = segments[0].directory
    if bytes_dropped:
        logger.warning(
            "%s: recovery dropped %d bytes from %s (%s); %d later segments deleted; "
            "%d batches in %d segments are valid",
            directory,
            bytes_dropped,
            truncated_segment,
            reason,
            len(deleted),
            batches_scanned,
            len(scanned),
        )
    else:
        logger.info(
            "%s: recovery found %d valid batches in %d segments, %d indexes rebuilt",
            directory,
            batches_scanned,
            len(scanned),
            len(indexes_rebuilt),
        )
    return segments, report, leader_epoch_starts
