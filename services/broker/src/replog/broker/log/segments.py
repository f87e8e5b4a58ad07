"""The segment files of one log, in offset order: which one holds an offset, rolling, reading across them,
cutting them back, and which rolled ones still wait for an fsync.

Theory of operation (docs/architecture.md, "Storage"; Kafka's `LocalLog` / `LogSegments`):

Segments hold contiguous offsets from the first one's base offset (the log
start) to the last one's next offset (the LEO); only the last, the active one,
is appended to. A write that would overflow the active segment's size, or its
32-bit relative offsets, rolls it first: the old segment is sealed and fsynced
(or, with `LogConfig.fsync_on_roll` False, listed for its owner to fsync later,
off the append path, docs/perf/rolled-segment-fsync.md) and a new one begins at
its next offset. Cutting back deletes whole segments newest first, so a crash
leaves a prefix of the log; retention deletes oldest first, leaving a suffix.
Every cut or deletion changes the layout version, which voids a report of
rolled segments fsynced under an older layout.

The log start offset is the first offset a reader may ask for. Retention moves
it to the base of the first segment it keeps; DeleteRecords (`advance_start`)
may put it inside a segment, whose lower records then stay on disk, unreadable,
until the whole segment lies below the start and goes. A time roll
(`LogConfig.segment_ms`) counts a segment's age from when this process began
appending to it, on the monotonic clock: producers' timestamps may be anything.

This class knows files and offsets only: the leader-epoch cache, the flush
policy and the recovery point belong to `PartitionLog`, which owns it and
serialises every call.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

from replog.common.records import BatchHeader, CorruptRecordError, check_batch, iter_batches

from .checkpoints import TEMP_SUFFIX, create_marker_file, fsync_directory
from .config import LogConfig
from .descriptors import UNTRACKED, LogDescriptors, Untracked
from .errors import LogOffsetMismatchError
from .results import CorruptionReport
from .retention import SegmentSummary
from .segment import LogSegment
from .segment_names import COMPACTED_MARKER_FILE, SWAP_SUFFIX
from .segment_scan import TornReadError, out_of_sequence

logger = logging.getLogger(__name__)

RELATIVE_OFFSET_MAX = 2**31 - 1
SET_ASIDE_SUFFIX = ".deleted" + TEMP_SUFFIX  # a leftover recovery removes, should a crash come first


class Segments:
    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment]) -> None:
        assert segments, "a log always has an active segment"
        self._directory = directory
        self._config = config
        self._segments = segments
        # once compacted, always read as possibly holding gaps, whatever the policy is now (`mark_compacted`)
        self.gaps_allowed = marked_compacted(directory)
        for segment in segments:
            segment.gaps_allowed = self.gaps_allowed
        self._unsynced_rolled: list[LogSegment] = []  # rolled, fsync pending (fsync_on_roll False)
        self._layout_version = 0  # bumped whenever segments are cut or deleted
        self._set_aside: list[Path] = []  # files of deleted segments, renamed aside (remove_deleted_at_once False)
        self._log_start_offset = segments[0].base_offset  # at or above the first base, at or below the LEO
        self._active_since_ms: int | None = None  # monotonic time of the active segment's first write here
        self._descriptors: LogDescriptors | Untracked = UNTRACKED  # the log's account with the budget

    def track_descriptors(self, descriptors: LogDescriptors) -> None:
        """From now on every descriptor the segments open or close is counted in `descriptors`."""
        self._descriptors = descriptors
        for segment in self._segments:
            segment.descriptors = descriptors
            if segment.holds_descriptor:
                descriptors.opened()

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment.create(self._directory, base_offset, self._config.index_interval_bytes,
                                    self._descriptors)
        segment.gaps_allowed = self.gaps_allowed
        return segment

    @property
    def in_order(self) -> list[LogSegment]:
        """The segments, oldest first: one list, changed in place and never replaced, so a reader may
        keep it (PartitionLog reads its two ends on every produce and fetch). Only this class changes it."""
        return self._segments

    def __getitem__(self, index: int) -> LogSegment:
        return self._segments[index]

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._segments)

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    def update_config(self, config: LogConfig) -> None:
        """The topic's settings changed: the next write rolls by the new size and age. Whether the log may
        hold gaps does not follow the policy (`mark_compacted`)."""
        self._config = config

    def mark_compacted(self) -> None:
        """The log is about to hold offset gaps (a cleaned segment, or a leader's compacted batches): from now
        on it is read as compacted. The marker file is made durable before the first gap is written, so every
        later opening reads it so too, whatever the topic's cleanup.policy is by then (or before the broker
        learns it, at start-up); a log never marked has no gap, and one there is damage."""
        if self.gaps_allowed:
            return
        create_marker_file(self._directory / COMPACTED_MARKER_FILE)
        logger.info("%s: the log is compacted from now on: batches may have offset gaps between them",
                    self._directory)
        self.gaps_allowed = True
        for segment in self._segments:
            segment.gaps_allowed = True

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    def index_of(self, offset: int) -> int:
        """Index of the segment whose offsets include `offset` (the last with base <= it)."""
        return max(bisect.bisect_right(self._segments, offset, key=_base_offset) - 1, 0)

    # -- writes ----------------------------------------------------------------

    def continuation(self, batches: bytes) -> tuple[list[tuple[int, BatchHeader]], bool]:
        """(position, header) of each of a leader's `batches`, checked whole, with valid CRCs, and
        continuing this log at its LEO, exactly or above it (LogOffsetMismatchError / CorruptRecordError);
        and whether there is such a gap. A gap is the leader's cleaner's, whatever this log's policy (a
        follower may not know the topic's yet, or the policy changed since): the caller marks the log
        compacted before writing (`mark_compacted`)."""
        headers: list[tuple[int, BatchHeader]] = []
        expected_offset = self.log_end_offset
        gapped = False
        scan = iter_batches(batches)
        for position, header in scan:
            check_batch(batches, header, position, check_records=False)
            if out_of_sequence(header.base_offset, expected_offset, gaps=True):
                where = "the first batch" if not headers else f"the batch at position {position}"
                raise LogOffsetMismatchError(
                    f"{self._directory}: {where} starts at offset {header.base_offset}, expected {expected_offset}"
                    + (" (the log end offset)" if not headers else "") + " or more"
                )
            gapped = gapped or header.base_offset != expected_offset
            headers.append((position, header))
            expected_offset = header.next_offset
        if scan.tail_bytes:
            raise CorruptRecordError(
                f"{scan.tail_bytes} bytes of an incomplete batch at position {scan.stop_position}"
            )
        return headers, gapped

    def write(self, batch: bytes | memoryview, header: BatchHeader, before_roll: Callable[[], None],
              now_ms: int = 0) -> None:
        """Append one whole batch at the LEO, rolling first when the active segment is full or, with
        `segment_ms`, older than that at `now_ms` (monotonic); `before_roll` runs once the old segment
        is flushed and before it is sealed."""
        active = self._segments[-1]
        segment_full = active.size_bytes + len(batch) > self._config.segment_bytes
        offsets_full = header.last_offset - active.base_offset > RELATIVE_OFFSET_MAX
        segment_ms = self._config.segment_ms
        if segment_ms is not None:
            if self._active_since_ms is None:
                self._active_since_ms = now_ms
            segment_full = segment_full or now_ms - self._active_since_ms >= segment_ms
        if active.size_bytes > 0 and (segment_full or offsets_full):
            active = self._roll(before_roll)
            self._active_since_ms = None if segment_ms is None else now_ms
        active.append(batch, header)

    def _roll(self, before_roll: Callable[[], None]) -> LogSegment:
        """Every step may fail with nothing lost (an EMFILE) and is safe to take again on the next append."""
        old = self._segments[-1]
        if self._config.fsync_on_roll:
            old.flush()
        elif old not in self._unsynced_rolled:
            self._unsynced_rolled.append(old)
        before_roll()
        old.index.close()  # immutable from now on: its pending entries are written; the index stays in memory
        new = self._new_segment(old.next_offset)
        try:
            fsync_directory(self._directory)
        except BaseException:
            new.close()
            raise
        old.forget_tail()
        self._segments.append(new)
        logger.debug("%s: rolled to segment %s", self._directory, new.name)
        return new

    # -- reads -----------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int, limit_offset: int) -> bytes:
        """Whole batches from the one holding `start_offset` (below `limit_offset`, within the log),
        about `max_bytes` of them and at least one; none starting at or above `limit_offset`."""
        i = self.index_of(start_offset)
        tail = self._segments[i].read_tail(start_offset, max_bytes, limit_offset)
        if tail is not None and (tail[1] or i == len(self._segments) - 1):
            return tail[0]
        found = self._segments[i].find_batch(start_offset)
        while found is None and self._segments[i].gaps_allowed and i < len(self._segments) - 1:
            i += 1  # the cleaner removed the segment's last records: read on from the next segment
            found = self._segments[i].find_batch(start_offset)
        if found is None and self.gaps_allowed:
            return b""  # a gap at the end of the active segment (a truncation into a gap): nothing there yet
        if found is None:  # the segment's end was damaged after it was written (recovery did not scan it)
            raise TornReadError(f"offset {start_offset} is below the log end but in no batch of "
                                f"{self._segments[i].name}")
        position = found[0]
        parts: list[bytes] = []
        read_bytes = 0
        for segment in self._segments[i:]:
            data, stopped = segment.read_batches(position, max_bytes - read_bytes, limit_offset, not parts)
            if data:
                parts.append(data)
                read_bytes += len(data)
            if stopped:
                break
            position = 0
        return b"".join(parts)

    def iter_batch_headers(self) -> Iterator[BatchHeader]:
        for segment in list(self._segments):
            for _, header in segment.iter_headers():
                yield header

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        for segment in self._segments:
            # An empty segment's max timestamp is -1, "none": a negative target must not take it for a record's.
            # The max may be only an empty batch's (the cleaner's, batch.py): the next segment may hold the record.
            if segment.size_bytes and segment.max_timestamp_ms() >= timestamp_ms:
                found = segment.offset_for_timestamp(timestamp_ms)
                if found is not None:
                    return found
        return None

    def summaries(self, *, with_timestamps: bool) -> list[SegmentSummary]:
        """What retention decides on (retention.py), oldest first; newest timestamps only if asked."""
        return [SegmentSummary(segment.next_offset, segment.size_bytes,
                               segment.max_timestamp_ms() if with_timestamps else -1) for segment in self._segments]

    # -- cuts and deletions -------------------------------------------------------

    def cut_to(self, offset: int) -> int:
        """Cut so the log ends at the last batch boundary <= `offset` (within the log, below the
        LEO); the cut segment is fsynced. Returns the new LEO."""
        i = self.index_of(offset)
        found = self._segments[i].find_batch(offset)
        if found is None and self.gaps_allowed:  # in a gap the cleaner left at the segment's end: all of it stays
            position, new_end = self._segments[i].size_bytes, offset
        else:
            assert found is not None, f"offset {offset} below the LEO but in no batch of {self._segments[i].name}"
            position, header = found
            # a batch starting above `offset` follows a gap: the log then ends at `offset`, after the gap's start
            new_end = min(header.base_offset, offset)
        later = self._segments[i + 1 :]
        for segment in reversed(later):  # newest first: a crash leaves a prefix of the log
            segment.delete()
        del self._segments[i + 1 :]
        if later:
            fsync_directory(self._directory)
        self._segments[i].truncate_to(position, new_end)
        self._forget_unsynced_beyond_active()
        self._log_start_offset = min(self._log_start_offset, new_end)  # a start inside the cut batch
        return new_end

    def restart_at(self, offset: int) -> None:
        """Delete every segment; the log restarts empty at `offset`."""
        for segment in reversed(self._segments):
            segment.delete()
        self._segments[:] = [self._new_segment(offset)]
        self._log_start_offset = offset
        self._active_since_ms = None
        self._forget_unsynced_beyond_active()
        fsync_directory(self._directory)

    def delete_oldest(self, count: int) -> list[LogSegment]:
        """Delete the `count` oldest segments (never the active one); returns them. With
        `remove_deleted_at_once` False their files are only renamed aside, for `take_set_aside`."""
        assert count < len(self._segments), (count, len(self._segments))
        doomed = self._segments[:count]
        del self._segments[:count]
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        self._forget_unsynced_beyond_active()
        for segment in doomed:  # oldest first: a crash leaves a suffix of the log
            if self._config.remove_deleted_at_once:
                segment.delete()
            else:
                segment.close(write_index=False)  # going away: nothing to open a file for
                for path in (segment.log_path, segment.index_path):
                    aside = path.with_name(path.name + SET_ASIDE_SUFFIX)
                    if path.exists():
                        os.rename(path, aside)
                        self._set_aside.append(aside)
        if self._config.remove_deleted_at_once:
            fsync_directory(self._directory)
        return doomed

    @property
    def has_set_aside(self) -> bool:
        return bool(self._set_aside)

    def take_set_aside(self) -> list[Path]:
        """The renamed-aside files of deleted segments, for the owner to remove (`remove_set_aside`)."""
        taken, self._set_aside = self._set_aside, []
        return taken

    def advance_start(self, offset: int) -> list[LogSegment]:
        """Move the log start up to `offset` (at most the LEO) and delete the segments wholly below it
        (never the active one); returns them."""
        assert self._log_start_offset < offset <= self.log_end_offset, (self._log_start_offset, offset)
        count = 0
        while count < len(self._segments) - 1 and self._segments[count].next_offset <= offset:
            count += 1
        doomed = self.delete_oldest(count) if count else []
        self._log_start_offset = offset
        return doomed

    # -- the log cleaner's swap -----------------------------------------------------------

    def rolled_segment(self, base_offset: int) -> LogSegment | None:
        """The rolled (not active) segment starting at `base_offset`, if there is one."""
        i = self.index_of(base_offset)
        segment = self._segments[i]
        return segment if segment.base_offset == base_offset and i < len(self._segments) - 1 else None

    def swap_cleaned(self, base_offset: int, size_bytes: int, cleaned: Path) -> bool:
        """Put the fsynced rewrite `cleaned` (`<segment>.log.cleaned`) in place of the rolled segment
        starting at `base_offset`, if it is still there as it was read (`size_bytes`); else discard it.

        A rewrite with nothing left removes the segment instead, its offsets then the previous segment's
        (a gap at its end), so a compacted log does not keep one empty file per cleaned segment; the first
        segment stays, empty if need be, where the log starts.

        Crash safety: the rename to `.swap` (made durable) decides the swap; recovery finishes a swap it
        finds (`finish_interrupted_swaps`) and discards a `.cleaned` file. The old index is removed before
        the segment is replaced, and rebuilt from the new file."""
        segment = self.rolled_segment(base_offset)
        if segment is None or segment.size_bytes != size_bytes:
            cleaned.unlink(missing_ok=True)
            return False
        self.mark_compacted()
        i = self._segments.index(segment)
        if i > 0 and cleaned.stat().st_size == 0:  # nothing left: the previous segment takes its offsets over
            segment.delete()
            cleaned.unlink()
            fsync_directory(self._directory)
            self._segments[i - 1].next_offset = segment.next_offset
            del self._segments[i]
            self._layout_version += 1
            self._unsynced_rolled = [s for s in self._unsynced_rolled if s is not segment]
            return True
        swap = segment.log_path.with_name(segment.log_path.name + SWAP_SUFFIX)
        os.rename(cleaned, swap)
        fsync_directory(self._directory)
        segment.close(write_index=False)
        replace_with_swap(segment.log_path, segment.index_path, swap, self._directory)
        new = LogSegment.open_existing(self._directory, base_offset, self._config.index_interval_bytes)
        new.next_offset = segment.next_offset
        new.gaps_allowed = True
        new.load_index()
        new.index.close()  # immutable: its entries are written
        new.release_descriptor()
        new.descriptors = self._descriptors
        self._segments[self._segments.index(segment)] = new
        self._layout_version += 1  # a report of fsyncs under the old layout names the old file
        self._unsynced_rolled = [s for s in self._unsynced_rolled if s is not segment]
        return True

    # -- durability ------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every rolled segment not yet synced, then the active one."""
        for segment in self._unsynced_rolled:
            segment.flush()
        self._unsynced_rolled = []
        self._segments[-1].flush()

    @property
    def has_rolled_to_sync(self) -> bool:
        return bool(self._unsynced_rolled)

    def rolled_after(self, base_offset: int) -> tuple[int, int, int, str] | None:
        """(base offset, duplicated fd, size, name) of the first rolled (immutable) segment whose base is
        above `base_offset`, for a check made without the log's owner's lock (the scrubber); None if none."""
        for segment in self._segments[:-1]:
            if segment.base_offset > base_offset:
                return segment.base_offset, segment.duplicate_fd(), segment.size_bytes, segment.name
        return None

    def rolled_to_sync(self) -> tuple[int, list[tuple[int, int]]]:
        """(layout version, [(duplicated fd, next offset)]) of the rolled segments whose fsync is pending."""
        taken: list[tuple[int, int]] = []
        try:
            for segment in self._unsynced_rolled:
                taken.append((segment.duplicate_fd(), segment.next_offset))
        except BaseException:  # e.g. EMFILE: none of them is handed out, the next round asks again
            for fd, _ in taken:
                os.close(fd)
            raise
        return self._layout_version, taken

    def rolled_synced(self, token: int, next_offset: int) -> bool:
        """The rolled segments listed under `token`, up to `next_offset`, are on disk; True when that
        left none pending (everything below `next_offset` is then durable)."""
        if token != self._layout_version:
            return False
        for segment in self._unsynced_rolled:
            if segment.next_offset <= next_offset:
                segment.release_descriptor()  # immutable and on disk: nothing more is written through it
        self._unsynced_rolled = [s for s in self._unsynced_rolled if s.next_offset > next_offset]
        if self._unsynced_rolled:
            return False
        assert next_offset <= self._segments[-1].base_offset, (next_offset, self._segments[-1].base_offset)
        return True

    def _forget_unsynced_beyond_active(self) -> None:
        """After segments were cut or deleted: only segments still rolled may wait for an fsync
        (a cut segment is fsynced by the cut)."""
        self._layout_version += 1
        rolled = {id(segment) for segment in self._segments[:-1]}
        self._unsynced_rolled = [s for s in self._unsynced_rolled if id(s) in rolled]

    # -- checks and lifecycle -----------------------------------------------------------

    def verify(self) -> list[CorruptionReport]:
        """Deep-check every batch of every segment (CRC, records, contiguous offsets); change nothing."""
        reports: list[CorruptionReport] = []
        previous_end_offset = None
        previous_gaps_allowed = False  # the cleaner leaves gaps; elsewhere one is lost data
        for segment in self._segments:
            if previous_end_offset is not None and (previous_end_offset > segment.base_offset or (
                    previous_end_offset < segment.base_offset and not previous_gaps_allowed)):
                reports.append(CorruptionReport(
                    segment.name, 0,
                    f"segment starts at {segment.base_offset}, the previous one ends at {previous_end_offset}"))
            segment_reports, previous_end_offset = segment.verify(segment.base_offset)
            previous_gaps_allowed = segment.gaps_allowed
            reports.extend(segment_reports)
        return reports

    def release_descriptors(self) -> None:
        for segment in self._segments:
            segment.release_descriptor()

    def close(self) -> None:
        for segment in self._segments:
            segment.close()


def marked_compacted(directory: Path) -> bool:
    """Whether the log in `directory` was ever compacted, so may hold offset gaps (`Segments.mark_compacted`)."""
    return (directory / COMPACTED_MARKER_FILE).exists()


def replace_with_swap(log_path: Path, index_path: Path, swap: Path, directory: Path) -> None:
    """The last steps of a swap (also recovery's): the old index goes, then the rewrite takes the segment's name."""
    index_path.unlink(missing_ok=True)
    fsync_directory(directory)
    os.rename(swap, log_path)
    fsync_directory(directory)


def remove_set_aside(directory: Path, paths: list[Path]) -> None:
    """Remove files `Segments.take_set_aside` gave, and make that durable (no lock on the log needed)."""
    for path in paths:
        path.unlink(missing_ok=True)
    if paths:
        fsync_directory(directory)


def _base_offset(segment: LogSegment) -> int:
    return segment.base_offset
