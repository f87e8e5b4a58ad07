"""The log of one partition replica: segments, leader-epoch cache, flushing (docs/architecture.md, "Storage").

Theory of operation
-------------------
A directory holds the segments `<base_offset>.log` (+ `.index`) and the
`leader-epoch-checkpoint`. Offsets are contiguous from `log_start_offset`
(base of the first segment) to `log_end_offset` (LEO, the next offset to
assign, the end of the last segment, the only one appended to).

- The leader appends one producer batch at a time: it is validated (CRC,
  records, size), given offsets from the LEO and stamped with the leader
  epoch. A follower appends the leader's batches as they are, which must
  continue its log exactly at its LEO.
- A batch whose leader epoch is newer than the latest known adds an entry
  to the epoch cache, which is checkpointed at once (rare, and truncation
  decisions depend on it, KIP-101).
- Reads return whole batches, from the one holding the start offset.
- `truncate_to(offset)` leaves the log ending at the last batch boundary at
  or below `offset`: every batch whose last offset is >= `offset` goes. The
  followers' truncation points are epoch end offsets, which are batch
  boundaries, so then exactly `offset` is kept.
- Durability: segments are fsynced when rolled (or, with
  `LogConfig.fsync_on_roll` False, later by the owner through
  `rolled_segments_to_sync` / `rolled_segments_synced`, off the append path)
  and when truncated; the active one when the flush policy says so, on
  `flush()` / `close()`, or per append with `fsync=True`. `recovery_point` is
  an offset below which everything was fsynced; the broker checkpoints it and
  passes it back to `open`, whose recovery then scans from there (see
  recovery.py).

Not thread-safe: the replica that owns the log serialises calls to it.
"""

from __future__ import annotations

import bisect
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from replog.common.clock import Clock
from replog.common.records import (
    CorruptRecordError,
    BatchHeader,
    check_batch,
    iter_batches,
    validate_batch,
    with_offset_and_epoch,
)

from .checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    TEMP_SUFFIX,
    CheckpointError,
    fsync_directory,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from .config import LogConfig
from .errors import LogOffsetMismatchError, OffsetOutOfRangeError
from .flush_policy import FlushPolicy
from .leader_epoch_cache import LeaderEpochCache
from .recovery import recover_segments
from .results import AppendInfo, CorruptionReport, RecoveryReport
from .retention import SegmentSummary, count_deletable_segments
from .segment import INDEX_SUFFIX, LOG_SUFFIX, LogSegment, parse_segment_file_name

logger = logging.getLogger(__name__)

RELATIVE_OFFSET_MAX = 2**31 - 1


class PartitionLog:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        leader_epoch_cache: LeaderEpochCache,
        recovery_report: RecoveryReport,
    ) -> None:
        self.directory = directory
        self.config = config
        self.recovery_report = recovery_report
        self._clock = clock
        self._segments = segments
        self._leader_epoch_cache = leader_epoch_cache
        self._flush_policy = FlushPolicy(config.flush_messages, config.flush_interval_ms, clock.monotonic_ms())
        self._recovery_point = self.log_end_offset
        self._epoch_checkpoint_dirty = False
        self._unsynced_rolled: list[LogSegment] = []  # rolled, fsync pending (fsync_on_roll False)
        self._layout_version = 0  # bumped whenever segments are cut or deleted
        self._closed = False

    # -- opening -----------------------------------------------------------

    @classmethod
    def open(
        cls, directory: Path, config: LogConfig, clock: Clock, *, recovery_point: int | None = None
    ) -> PartitionLog:
        """Open the log in `directory`, creating it or recovering what is there.

        `recovery_point` (from the broker's recovery-point checkpoint) says
        from where to validate; None validates only the active segment.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        bases = _clean_directory(directory)
        if bases:
            segments = [LogSegment.open_existing(directory, base, config.index_interval_bytes) for base in bases]
            segments, report, leader_epoch_starts = recover_segments(segments, recovery_point)
        else:
            # A new, empty log needs no fsync: losing it in a crash loses no record, and the
            # controller recreates it (docs/perf/new-log-fsync.md).
            segments = [LogSegment.create(directory, 0, config.index_interval_bytes)]
            report, leader_epoch_starts = RecoveryReport(), []
        leader_epoch_cache, cache_changed = _load_leader_epoch_cache(directory, segments, leader_epoch_starts)
        log = cls(directory, config, clock, segments, leader_epoch_cache, report)
        if cache_changed and (bases or leader_epoch_cache.entries()):
            log._checkpoint_leader_epoch_cache()
        log.release_descriptors()  # reopened on first use: idle replicas hold no file open
        return log

    def release_descriptors(self) -> None:
        """Close every open file of the log until its next use (see LogSegment.release_descriptor)."""
        for segment in self._segments:
            segment.release_descriptor()

    # -- state -------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    @property
    def recovery_point(self) -> int:
        """Every offset below this was fsynced."""
        return self._recovery_point

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    # -- appends -------------------------------------------------------------

    def append_as_leader(
        self, batch: bytes, leader_epoch: int, *, fsync: bool = False, validated: BatchHeader | None = None
    ) -> AppendInfo:
        """Validate one producer batch, give it offsets from the LEO, stamp `leader_epoch`, write it.

        Raises CorruptRecordError / RecordTooLargeError with nothing written.
        `validated`: the header `validate_batch(batch, max_bytes=config.max_batch_bytes)`
        already returned (the broker validates before its idempotence check, outside
        the partition lock); the batch is then not walked a second time.
        """
        self._assert_open()
        assert leader_epoch >= 0 and leader_epoch >= self._leader_epoch_cache.latest_epoch(), (
            f"appending with leader epoch {leader_epoch}, the log has {self._leader_epoch_cache.latest_epoch()}"
        )
        if validated is None:
            header = validate_batch(batch, max_bytes=self.config.max_batch_bytes)
        else:
            assert validated.size_bytes <= self.config.max_batch_bytes, (validated.size_bytes, self.config)
            header = validated
        if header.size_bytes != len(batch):
            raise CorruptRecordError(f"{len(batch) - header.size_bytes} bytes follow the batch; send one batch")
        base_offset = self.log_end_offset
        stamped_header = header.stamped(base_offset, leader_epoch)
        self._write_batch(with_offset_and_epoch(batch, base_offset, leader_epoch), stamped_header)
        if self._leader_epoch_cache.assign(leader_epoch, base_offset):
            self._epoch_checkpoint_dirty = True  # written by the next flush (see _checkpoint_leader_epoch_cache)
        self._after_append(header.record_count, fsync)
        return AppendInfo(
            base_offset=base_offset,
            last_offset=stamped_header.last_offset,
            max_timestamp_ms=header.max_timestamp_ms,
            record_count=header.record_count,
            byte_size=len(batch),
        )

    def append_as_follower(self, batches: bytes, *, fsync: bool = False) -> AppendInfo | None:
        """Append the leader's batches as they are (offsets and leader epochs kept).

        All are checked before anything is written: each must be whole with a
        valid CRC and continue the log exactly at its LEO, else
        LogOffsetMismatchError / CorruptRecordError. None if `batches` is empty.
        """
        self._assert_open()
        if not batches:
            return None
        headers = self._check_follower_batches(batches)
        view = memoryview(batches)
        cache_changed = False
        for position, header in headers:
            self._write_batch(view[position : position + header.size_bytes], header)
            cache_changed |= self._leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        if cache_changed:
            self._epoch_checkpoint_dirty = True  # written by the next flush (see _checkpoint_leader_epoch_cache)
        record_count = sum(header.record_count for _, header in headers)
        self._after_append(record_count, fsync)
        return AppendInfo(
            base_offset=headers[0][1].base_offset,
            last_offset=headers[-1][1].last_offset,
            max_timestamp_ms=max(header.max_timestamp_ms for _, header in headers),
            record_count=record_count,
            byte_size=len(batches),
            headers=tuple(header for _, header in headers),
        )

    def _check_follower_batches(self, batches: bytes) -> list[tuple[int, BatchHeader]]:
        headers: list[tuple[int, BatchHeader]] = []
        expected_offset = self.log_end_offset
        scan = iter_batches(batches)
        for position, header in scan:
            check_batch(batches, header, position, check_records=False)
            if header.base_offset != expected_offset:
                where = "the first batch" if not headers else f"the batch at position {position}"
                raise LogOffsetMismatchError(
                    f"{self.directory}: {where} starts at offset {header.base_offset}, expected {expected_offset}"
                    + (" (the log end offset)" if not headers else "")
                )
            headers.append((position, header))
            expected_offset = header.next_offset
        if scan.tail_bytes:
            raise CorruptRecordError(
                f"{scan.tail_bytes} bytes of an incomplete batch at position {scan.stop_position}"
            )
        return headers

    def _write_batch(self, batch: bytes | memoryview, header: BatchHeader) -> None:
        active = self._segments[-1]
        segment_full = active.size_bytes + len(batch) > self.config.segment_bytes
        offsets_full = header.last_offset - active.base_offset > RELATIVE_OFFSET_MAX
        if active.size_bytes > 0 and (segment_full or offsets_full):
            active = self._roll()
        active.append(batch, header)

    def _roll(self) -> LogSegment:
        old = self._segments[-1]
        if self.config.fsync_on_roll:
            old.flush()
        else:
            self._unsynced_rolled.append(old)
        if self._epoch_checkpoint_dirty:  # entries for the sealed segment are durable with it
            self._checkpoint_leader_epoch_cache()
        old.index.close()  # immutable from now on; the index stays in memory
        old.forget_tail()
        new = LogSegment.create(self.directory, old.next_offset, self.config.index_interval_bytes)
        fsync_directory(self.directory)
        self._segments.append(new)
        logger.debug("%s: rolled to segment %s", self.directory, new.name)
        return new

    def _after_append(self, record_count: int, fsync: bool) -> None:
        self._flush_policy.on_append(record_count)
        if fsync or self._flush_policy.is_due(self._clock.monotonic_ms()):
            self.flush()

    # -- reads ---------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        """Whole batches from the one holding `start_offset`, about `max_bytes` of them.

        At least one batch (even if larger than `max_bytes`) unless the log
        ends or `upper_offset` (exclusive: no batch starting at or above it)
        stops it first; b"" at the LEO. OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset].
        """
        self._assert_open()
        log_end_offset = self.log_end_offset
        if not self.log_start_offset <= start_offset <= log_end_offset:
            raise OffsetOutOfRangeError(start_offset, self.log_start_offset, log_end_offset)
        limit_offset = log_end_offset if upper_offset is None else min(upper_offset, log_end_offset)
        if start_offset >= limit_offset:
            return b""
        i = self._segment_index(start_offset)
        tail = self._segments[i].read_tail(start_offset, max_bytes, limit_offset)
        if tail is not None and (tail[1] or i == len(self._segments) - 1):
            return tail[0]
        found = self._segments[i].find_batch(start_offset)
        assert found is not None, f"offset {start_offset} below the LEO but in no batch of {self._segments[i].name}"
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

    def _segment_index(self, offset: int) -> int:
        """Index of the segment whose offsets include `offset` (the last with base <= it)."""
        return max(bisect.bisect_right(self._segments, offset, key=_base_offset) - 1, 0)

    def iter_batch_headers(self) -> Iterator[BatchHeader]:
        """Every batch header, oldest first (header reads only; e.g. to rebuild producer state)."""
        self._assert_open()
        for segment in list(self._segments):
            for _, header in segment.iter_headers():
                yield header

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp_ms) of the first record stamped at or after `timestamp_ms`."""
        self._assert_open()
        for segment in self._segments:
            if segment.max_timestamp_ms() >= timestamp_ms:
                found = segment.offset_for_timestamp(timestamp_ms)
                assert found is not None, f"{segment.name}: max timestamp but no record at it"
                return found
        return None

    # -- truncation ----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Cut the log so it ends at the last batch boundary <= `offset`.

        Batches whose last offset is >= `offset` are removed (so a batch that
        straddles `offset` goes whole); a no-op at or past the LEO. Below the
        log start offset the log restarts empty at `offset`. The epoch cache is
        cut to match; all of it is fsynced before returning.
        """
        self._assert_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            return
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        i = self._segment_index(offset)
        found = self._segments[i].find_batch(offset)
        assert found is not None, f"offset {offset} below the LEO but in no batch of {self._segments[i].name}"
        position, header = found
        later = self._segments[i + 1 :]
        for segment in reversed(later):  # newest first: a crash leaves a prefix of the log
            segment.delete()
        del self._segments[i + 1 :]
        if later:
            fsync_directory(self.directory)
        self._segments[i].truncate_to(position, header.base_offset)
        self._forget_unsynced_beyond_active()
        new_end_offset = header.base_offset
        if self._leader_epoch_cache.truncate_from_end(new_end_offset):
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = min(self._recovery_point, new_end_offset)
        logger.info("%s: truncated to offset %d (asked for %d)", self.directory, new_end_offset, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and the epoch cache; the log restarts empty at `offset`."""
        self._assert_open()
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        for segment in reversed(self._segments):
            segment.delete()
        self._segments = [LogSegment.create(self.directory, offset, self.config.index_interval_bytes)]
        self._forget_unsynced_beyond_active()
        fsync_directory(self.directory)
        if self._leader_epoch_cache.clear():
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = offset
        self._flush_policy.on_flush(self._clock.monotonic_ms())
        logger.info("%s: truncated fully, the log now starts at offset %d", self.directory, offset)

    # -- leader epochs -------------------------------------------------------

    def latest_epoch(self) -> int:
        """The newest leader epoch in the log; -1 when none is known."""
        return self._leader_epoch_cache.latest_epoch()

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """KIP-101: (largest known leader epoch <= `leader_epoch`, where its data ends); (-1, -1) if none."""
        return self._leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    def epoch_entries(self) -> list[tuple[int, int]]:
        """(leader_epoch, start_offset) entries, oldest first."""
        return self._leader_epoch_cache.entries()

    def _checkpoint_leader_epoch_cache(self, *, durable: bool = True) -> None:
        """Write the epoch cache's checkpoint.

        An append that starts a new epoch only marks the checkpoint dirty; the
        next flush (policy, roll, `close`, or `fsync=True`) writes it durably
        together with the records. Until then the file lags, and recovery,
        which scans every batch above the recovery point (the last flush),
        rebuilds the entries from their headers, so nothing is lost. Writing it
        on the append put it on every moved partition's first append after a
        failover (docs/perf/epoch-checkpoint.md). Truncations still write
        durably at once (KIP-101).
        """
        write_leader_epoch_checkpoint(self.directory / LEADER_EPOCH_CHECKPOINT_FILE,
                                      self._leader_epoch_cache.entries(), durable=durable)
        self._epoch_checkpoint_dirty = not durable

    # -- durability, retention, checks -----------------------------------------

    def flush(self) -> None:
        """fsync the active segment and its index (and any rolled segment not yet synced);
        everything below the LEO is then durable."""
        self._assert_open()
        for segment in self._unsynced_rolled:
            segment.flush()
        self._unsynced_rolled = []
        self._segments[-1].flush()
        if self._epoch_checkpoint_dirty:
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = self.log_end_offset
        self._flush_policy.on_flush(self._clock.monotonic_ms())

    @property
    def has_rolled_segments_to_sync(self) -> bool:
        """A cheap check before `rolled_segments_to_sync` (a periodic caller skips idle logs)."""
        return bool(self._unsynced_rolled)

    def rolled_segments_to_sync(self) -> tuple[int, list[tuple[int, int]]]:
        """Rolled segments whose fsync is still pending, as (duplicated fd, next offset), oldest first.

        The caller fsyncs and closes the descriptors without holding the log, then
        reports with `rolled_segments_synced(token, ...)`; `token` ties the report to
        this layout (a truncation or deletion in between voids it).
        """
        self._assert_open()
        return self._layout_version, [(s.duplicate_fd(), s.next_offset) for s in self._unsynced_rolled]

    def rolled_segments_synced(self, token: int, next_offset: int) -> None:
        """The rolled segments listed under `token`, up to `next_offset`, are now on disk."""
        self._assert_open()
        if token != self._layout_version:
            return
        self._unsynced_rolled = [s for s in self._unsynced_rolled if s.next_offset > next_offset]
        if not self._unsynced_rolled:
            assert next_offset <= self._segments[-1].base_offset, (next_offset, self._segments[-1].base_offset)
            self._recovery_point = max(self._recovery_point, next_offset)

    def _forget_unsynced_beyond_active(self) -> None:
        """After segments were cut or deleted: only segments still rolled may wait for an fsync
        (a cut segment is fsynced by the cut)."""
        self._layout_version += 1
        rolled = {id(segment) for segment in self._segments[:-1]}
        self._unsynced_rolled = [s for s in self._unsynced_rolled if id(s) in rolled]

    def maybe_flush(self) -> bool:
        """Flush if the interval policy says it is time; for a periodic caller. True if flushed."""
        if self._flush_policy.is_due(self._clock.monotonic_ms()):
            self.flush()
            return True
        return False

    def delete_old_segments(self, now_ms: int, *, upper_offset: int | None = None) -> list[str]:
        """Apply retention (never the active segment, nothing at or above `upper_offset`).

        Returns the names of the deleted segment files.
        """
        self._assert_open()
        if self.config.retention_ms is None and self.config.retention_bytes is None:
            return []
        summaries = [
            SegmentSummary(
                next_offset=segment.next_offset,
                size_bytes=segment.size_bytes,
                max_timestamp_ms=segment.max_timestamp_ms() if self.config.retention_ms is not None else -1,
            )
            for segment in self._segments
        ]
        count = count_deletable_segments(
            summaries,
            now_ms=now_ms,
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
            upper_offset=upper_offset,
        )
        if count == 0:
            return []
        doomed = self._segments[:count]
        del self._segments[:count]
        self._forget_unsynced_beyond_active()
        for segment in doomed:  # oldest first: a crash leaves a suffix of the log
            segment.delete()
        fsync_directory(self.directory)
        if self._leader_epoch_cache.truncate_from_start(self.log_start_offset):
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = max(self._recovery_point, self.log_start_offset)
        names = [segment.name for segment in doomed]
        logger.info("%s: retention deleted %d segments, log starts at %d", self.directory, count, self.log_start_offset)
        return names

    def verify(self) -> list[CorruptionReport]:
        """Deep-check every batch of every segment (CRC, records, contiguous offsets); change nothing."""
        self._assert_open()
        reports: list[CorruptionReport] = []
        previous_end_offset = None
        for segment in self._segments:
            if previous_end_offset is not None and previous_end_offset != segment.base_offset:
                reports.append(
                    CorruptionReport(
                        segment.name, 0, f"segment starts at {segment.base_offset}, the previous one ends at "
                        f"{previous_end_offset}"
                    )
                )
            segment_reports, previous_end_offset = segment.verify(segment.base_offset)
            reports.extend(segment_reports)
        return reports

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        for segment in self._segments:
            segment.close()
        self._closed = True

    def delete(self) -> None:
        """Close the log and remove its directory."""
        self._close_segments()
        shutil.rmtree(self.directory)

    def retire(self, to: Path) -> None:
        """Close the log and rename its directory to `to` (beside it), for the caller to remove:
        one rename now instead of removing every file."""
        self._close_segments()
        os.rename(self.directory, to)

    def _close_segments(self) -> None:
        if not self._closed:
            for segment in self._segments:
                segment.close()
            self._closed = True

    def _assert_open(self) -> None:
        assert not self._closed, f"{self.directory}: log used after close"

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory}, start={self.log_start_offset}, end={self.log_end_offset}, "
            f"segments={len(self._segments)})"
        )


def _base_offset(segment: LogSegment) -> int:
    return segment.base_offset


def _clean_directory(directory: Path) -> list[int]:
    """Remove leftovers of interrupted writes; return the segment base offsets, sorted."""
    bases = []
    for path in directory.iterdir():
        base_offset = parse_segment_file_name(path.name)
        if base_offset is not None:
            bases.append(base_offset)
        elif path.name.endswith(TEMP_SUFFIX):
            logger.info("%s: removing leftover %s", directory, path.name)
            path.unlink()
    for path in directory.glob("*" + INDEX_SUFFIX):
        if not path.with_suffix(LOG_SUFFIX).exists():
            logger.info("%s: removing index %s without a segment", directory, path.name)
            path.unlink()
    return sorted(bases)


def _load_leader_epoch_cache(
    directory: Path, segments: list[LogSegment], leader_epoch_starts: list[tuple[int, int]]
) -> tuple[LeaderEpochCache, bool]:
    """The epoch cache from its checkpoint, repaired to match the recovered log.

    The checkpoint only accelerates: every entry can be derived from batch
    headers, so a missing or unreadable checkpoint is rebuilt from them all.
    """
    path = directory / LEADER_EPOCH_CHECKPOINT_FILE
    entries = None
    if path.exists():
        try:
            entries = read_leader_epoch_checkpoint(path)
        except CheckpointError as exc:
            logger.warning("%s: rebuilding the leader epoch cache from the log: %s", directory, exc)
    changed = entries is None
    if entries is None:
        leader_epoch_starts = _scan_leader_epoch_starts(segments)
    cache = LeaderEpochCache(entries or [])
    changed |= cache.truncate_from_end(segments[-1].next_offset)
    for leader_epoch, start_offset in leader_epoch_starts:
        changed |= cache.assign(leader_epoch, start_offset)
    changed |= cache.truncate_from_start(segments[0].base_offset)
    return cache, changed


def _scan_leader_epoch_starts(segments: list[LogSegment]) -> list[tuple[int, int]]:
    starts: list[tuple[int, int]] = []
    for segment in segments:
        for _, header in segment.iter_headers():
            if header.partition_leader_epoch > (starts[-1][0] if starts else -1):
                starts.append((header.partition_leader_epoch, header.base_offset))
    return starts
