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

`open_log_files` is what a log finds in its directory when it opens: leftovers
of interrupted writes removed, the segments recovered (or a first, empty one
created), and the leader-epoch cache loaded from its checkpoint and repaired to
match the recovered log. The checkpoint only accelerates: every entry can be
derived from batch headers, so a missing or unreadable one is rebuilt.
"""

from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from replog.common.records import CorruptRecordError

from .checkpoints import LEADER_EPOCH_CHECKPOINT_FILE, TEMP_SUFFIX, CheckpointError, read_leader_epoch_checkpoint
from .config import LogConfig
from .leader_epoch_cache import LeaderEpochCache
from .results import RecoveryReport
from .segment import LogSegment
from .segment_names import (CLEANED_SUFFIX, COMPACTED_MARKER_FILE, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX,
                            parse_segment_file_name)
from .segments import replace_with_swap

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
    else:  # nothing lost: the broker's one line for all its logs says how many were loaded
        logger.debug(
            "%s: recovery found %d valid batches in %d segments, %d indexes rebuilt",
            directory,
            batches_scanned,
            len(scanned),
            len(indexes_rebuilt),
        )
    return segments, report, leader_epoch_starts


def open_log_files(
    directory: Path, config: LogConfig, recovery_point: int | None
) -> tuple[list[LogSegment], RecoveryReport, LeaderEpochCache, bool]:
    """The segments of the log in `directory` (recovered, or a new empty one), the recovery report, the
    epoch cache, and whether the cache must be checkpointed again (it differs from its file)."""
    bases, names = _clean_directory(directory)
    if bases:
        segments = [LogSegment.open_existing(directory, base, config.index_interval_bytes) for base in bases]
        # not config.compacts: the policy may have changed since (segments.marked_compacted)
        gaps_allowed = COMPACTED_MARKER_FILE in names
        for segment in segments:
            segment.gaps_allowed = gaps_allowed
        segments, report, leader_epoch_starts = recover_segments(segments, recovery_point)
    else:
        # A new, empty log needs no fsync: losing it in a crash loses no record, and the
        # controller recreates it (docs/perf/new-log-fsync.md).
        segments = [LogSegment.create(directory, 0, config.index_interval_bytes)]
        report, leader_epoch_starts = RecoveryReport(), []
    cache, cache_changed = _load_leader_epoch_cache(directory, segments, leader_epoch_starts,
                                                    LEADER_EPOCH_CHECKPOINT_FILE in names)
    return segments, report, cache, cache_changed and bool(bases or cache.entries())


def _clean_directory(directory: Path) -> tuple[list[int], set[str]]:
    """Remove leftovers of interrupted writes, finish an interrupted swap of the log cleaner; return the
    segment base offsets, sorted, and the names of the files left. One listing of the directory in the
    usual case: at start-up every replica's directory is read (docs/perf/scale.md)."""
    names = os.listdir(directory)
    if any(name.endswith(CLEANED_SUFFIX) or name.endswith(SWAP_SUFFIX) for name in names):
        finish_interrupted_swaps(directory)
        names = os.listdir(directory)
    bases = []
    left = set(names)
    for name in names:
        base_offset = parse_segment_file_name(name)
        if base_offset is not None:
            bases.append(base_offset)
        elif name.endswith(TEMP_SUFFIX):
            logger.info("%s: removing leftover %s", directory, name)
            (directory / name).unlink()
            left.discard(name)
    for name in names:
        if name.endswith(INDEX_SUFFIX) and name[: -len(INDEX_SUFFIX)] + LOG_SUFFIX not in left:
            logger.info("%s: removing index %s without a segment", directory, name)
            (directory / name).unlink()
            left.discard(name)
    return sorted(bases), left


def finish_interrupted_swaps(directory: Path) -> None:
    """A `.log.swap` file was decided on before a crash: it replaces its segment (the old index goes and is
    rebuilt). A `.log.cleaned` file was not: it is discarded, and the segment stays as it was."""
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.endswith(LOG_SUFFIX + CLEANED_SUFFIX):
            logger.info("%s: discarding the unfinished cleaned segment %s", directory, name)
            path.unlink()
        elif name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            log_path = path.with_name(name[: -len(SWAP_SUFFIX)])
            base_offset = parse_segment_file_name(log_path.name)
            if base_offset is None:
                continue
            logger.warning("%s: finishing the interrupted swap of cleaned segment %s", directory, log_path.name)
            replace_with_swap(log_path, log_path.with_suffix(INDEX_SUFFIX), path, directory)


def _load_leader_epoch_cache(
    directory: Path, segments: list[LogSegment], leader_epoch_starts: list[tuple[int, int]], checkpointed: bool
) -> tuple[LeaderEpochCache, bool]:
    """The epoch cache from its checkpoint, repaired to match the recovered log.

    The checkpoint only accelerates: every entry can be derived from batch
    headers, so a missing or unreadable checkpoint is rebuilt from them all.
    """
    path = directory / LEADER_EPOCH_CHECKPOINT_FILE
    entries = None
    unreadable = False
    if checkpointed:  # the file was in the directory's listing
        try:
            entries = read_leader_epoch_checkpoint(path)
        except CheckpointError as exc:
            logger.warning("%s: rebuilding the leader epoch cache from the log: %s", directory, exc)
            unreadable = True
    missing = entries is None
    if missing:
        leader_epoch_starts = _scan_leader_epoch_starts(segments)
    cache = LeaderEpochCache(entries or [])
    changed = unreadable
    changed |= cache.truncate_from_end(segments[-1].next_offset)
    for leader_epoch, start_offset in leader_epoch_starts:
        changed |= cache.assign(leader_epoch, start_offset)
    changed |= cache.truncate_from_start(segments[0].base_offset)
    # A missing checkpoint reads as an empty one: it needs writing only if the log has entries to put in it.
    # (An idle replica's log has none; writing the empty file cost two fsyncs per replica at every start.)
    changed |= missing and bool(cache.entries())
    return cache, changed


def _scan_leader_epoch_starts(segments: list[LogSegment]) -> list[tuple[int, int]]:
    starts: list[tuple[int, int]] = []
    for segment in segments:
        try:
            for _, header in segment.iter_headers():
                if header.partition_leader_epoch > (starts[-1][0] if starts else -1):
                    starts.append((header.partition_leader_epoch, header.base_offset))
        except CorruptRecordError as exc:  # damage in a segment recovery did not scan: reads stop there
            logger.error("%s: leader epochs read up to damage: %s", segment.log_path, exc)
    return starts
