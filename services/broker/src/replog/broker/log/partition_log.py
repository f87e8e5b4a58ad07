"""The log of one partition replica: segments, leader-epoch cache, flushing (docs/architecture.md, "Storage").

Theory of operation
-------------------
A directory holds the segments `<base_offset>.log` (+ `.index`) and the
`leader-epoch-checkpoint`. Offsets are contiguous from `log_start_offset`
(at or above the base of the first segment: retention and DeleteRecords move
it up, segments.py) to `log_end_offset` (LEO, the next offset to assign, the
end of the last segment, the only one appended to). The broker checkpoints
the log start and passes it back to `open`. `update_config` gives a running
log its topic's new settings (segment size and age, batch limit, retention,
flush policy).

- The leader appends one producer batch at a time: it is validated (CRC,
  records, size), given offsets from the LEO and stamped with the leader
  epoch. A follower appends the leader's batches as they are, which must
  continue its log at its LEO (or above it, after records the leader's
  cleaner removed: the log is then marked compacted, for good).
- A batch whose leader epoch is newer than the latest known adds an entry
  to the epoch cache, which is checkpointed at once (rare, and truncation
  decisions depend on it, KIP-101).
- Reads return whole batches, from the one holding the start offset.
- `truncate_to(offset)` leaves the log ending at the last batch boundary at
  or below `offset`: every batch whose last offset is >= `offset` goes. The
  followers' truncation points are epoch end offsets, which are batch
  boundaries, so then exactly `offset` is kept.
- Durability: segments are fsynced when rolled or cut (segments.py); the
  active one when the flush policy says so, on `flush()` / `close()`, or per
  append with `fsync=True`. `recovery_point` is an offset below which
  everything was fsynced; the broker checkpoints it and passes it back to
  `open`, whose recovery then scans from there (recovery.py).

Not thread-safe: the replica that owns the log serialises calls to it.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from replog.common.clock import Clock
from replog.common.records import BatchHeader, CorruptRecordError, validate_batch, with_offset_and_epoch

from .checkpoints import LEADER_EPOCH_CHECKPOINT_FILE, write_leader_epoch_checkpoint
from .cleaner import SegmentSnapshot
from .compaction import CleanableSegment
from .config import LogConfig
from .descriptors import LogDescriptors
from .errors import CorruptLogError, OffsetOutOfRangeError
from .flush_policy import FlushPolicy
from .leader_epoch_cache import LeaderEpochCache
from .log_start import LogStart
from .recovery import open_log_files
from .results import AppendInfo, CorruptionReport, RecoveryReport
from .segment import LogSegment
from .segment_scan import checked_prefix
from .segments import Segments, remove_set_aside

logger = logging.getLogger(__name__)


class PartitionLog(LogStart):
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
        self._segments = Segments(directory, config, segments)
        self._segment_list = self._segments.in_order  # its last segment ends at the LEO
        self._leader_epoch_cache = leader_epoch_cache
        self._flush_policy = FlushPolicy(config.flush_messages, config.flush_interval_ms, clock.monotonic_ms())
        self._recovery_point = self.log_end_offset
        self._epoch_checkpoint_dirty = False
        self._closed = False

    # -- opening -----------------------------------------------------------

    @classmethod
    def open(
        cls, directory: Path, config: LogConfig, clock: Clock, *, recovery_point: int | None = None,
        log_start_offset: int = 0,
    ) -> PartitionLog:
        """Open the log in `directory`, creating it or recovering what is there.

        `recovery_point` (from the broker's recovery-point checkpoint) says
        from where to validate; None validates only the active segment.
        `log_start_offset` (checkpointed) raises the start, capped at the LEO.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        segments, report, leader_epoch_cache, checkpoint_cache = open_log_files(directory, config, recovery_point)
        log = cls(directory, config, clock, segments, leader_epoch_cache, report)
        if checkpoint_cache:
            log._checkpoint_leader_epoch_cache()
        log.advance_log_start_offset(min(log_start_offset, log.log_end_offset))
        remove_set_aside(directory, log.take_set_aside_files())  # nobody else holds the log yet
        log.release_descriptors()  # reopened on first use: idle replicas hold no file open
        return log

    def release_descriptors(self) -> None:
        """Close every open file of the log until its next use (see LogSegment.release_descriptor)."""
        self._segments.release_descriptors()

    def track_descriptors(self, descriptors: LogDescriptors) -> None:
        """Count the log's descriptors in a budget from now on (descriptors.py); its owner calls this once."""
        self._segments.track_descriptors(descriptors)

    # -- state -------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._segments.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segment_list[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return self._segments.size_bytes

    @property
    def recovery_point(self) -> int:
        """Every offset below this was fsynced."""
        return self._recovery_point

    @property
    def gaps_allowed(self) -> bool:
        """A compacted log (now or once, Segments.mark_compacted): batches may have offset gaps between them."""
        return self._segments.gaps_allowed

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
        if validated is None or validated.size_bytes > self.config.max_batch_bytes:  # the limit may have changed
            header = validate_batch(batch, max_bytes=self.config.max_batch_bytes)
        else:
            header = validated
        if header.size_bytes != len(batch):
            raise CorruptRecordError(f"{len(batch) - header.size_bytes} bytes follow the batch; send one batch")
        if header.record_count == 0:
            raise CorruptRecordError("an empty batch: only the log cleaner writes one")
        base_offset = self.log_end_offset
        stamped_header = header.stamped(base_offset, leader_epoch)
        self._segments.write(with_offset_and_epoch(batch, base_offset, leader_epoch), stamped_header, self._before_roll,
                             self._roll_clock_ms())
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
        valid CRC and continue the log at its LEO, exactly or above it where
        the leader's cleaner removed records (the log is then marked compacted,
        Segments.mark_compacted), else LogOffsetMismatchError /
        CorruptRecordError. None if `batches` is empty.
        """
        self._assert_open()
        if not batches:
            return None
        headers, gapped = self._segments.continuation(batches)
        if gapped:
            self._segments.mark_compacted()
        view = memoryview(batches)
        for position, header in headers:  # a roll may fail (EMFILE) after some: each one's epoch is noted at once
            self._segments.write(view[position : position + header.size_bytes], header, self._before_roll,
                                 self._roll_clock_ms())
            if self._leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset):
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

    def _roll_clock_ms(self) -> int:
        return 0 if self.config.segment_ms is None else self._clock.monotonic_ms()

    def _before_roll(self) -> None:
        if self._epoch_checkpoint_dirty:  # entries for the sealed segment are durable with it
            self._checkpoint_leader_epoch_cache()

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
        [log_start_offset, log_end_offset]. Every batch's CRC and offsets are checked (recovery does not
        scan old segments): the read stops before a bad one, CorruptLogError if it is the first.
        """
        self._assert_open()
        log_end_offset = self.log_end_offset
        if not self.log_start_offset <= start_offset <= log_end_offset:
            raise OffsetOutOfRangeError(start_offset, self.log_start_offset, log_end_offset)
        limit_offset = log_end_offset if upper_offset is None else min(upper_offset, log_end_offset)
        if start_offset >= limit_offset:
            return b""
        try:
            data = self._segments.read(start_offset, max_bytes, limit_offset)
        except CorruptRecordError as exc:  # a header or the file's length is not what was written
            raise CorruptLogError(self.directory, start_offset, str(exc)) from exc
        if not data and self._segments.gaps_allowed:
            return b""  # a compacted log may end in a gap (a truncation into one): no record there yet
        if not data:  # below the log end every offset is in some batch: a header there was damaged
            raise CorruptLogError(self.directory, start_offset, "no batch holds it")
        valid_bytes, first_bad_offset, reason = checked_prefix(data, start_offset, self._segments.gaps_allowed)
        if valid_bytes == 0 and reason is not None:
            raise CorruptLogError(self.directory, first_bad_offset, reason)
        return data if valid_bytes == len(data) else data[:valid_bytes]

    def iter_batch_headers(self) -> Iterator[BatchHeader]:
        """Every batch header, oldest first (header reads only; e.g. to rebuild producer state)."""
        self._assert_open()
        yield from self._segments.iter_batch_headers()

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp_ms) of the first record stamped at or after `timestamp_ms`."""
        self._assert_open()
        return self._segments.offset_for_timestamp(timestamp_ms)

    # -- the log cleaner (cleaner.py) ------------------------------------------

    def cleaning_snapshot(self) -> tuple[list[SegmentSnapshot], list[tuple[int, int]]]:
        """For a cleaning pass: the rolled segments, each with a duplicated descriptor the caller closes, and
        (producer_id, base_offset) of the active segment's batches (their producers' last batches may be there)."""
        self._assert_open()
        snapshots: list[SegmentSnapshot] = []
        try:
            for segment in self._segment_list[:-1]:
                snapshots.append(SegmentSnapshot(segment.base_offset, segment.next_offset, segment.size_bytes,
                                                 segment.duplicate_fd()))
        except BaseException:  # e.g. EMFILE: nothing handed out
            for snapshot in snapshots:
                os.close(snapshot.fd)
            raise
        active = [(header.producer_id, header.base_offset) for _, header in self._segment_list[-1].iter_headers()]
        return snapshots, active

    def cleanable_segments(self) -> list[CleanableSegment]:
        """The rolled segments as compaction.py weighs them (newest timestamps cached once computed)."""
        self._assert_open()
        return [CleanableSegment(s.base_offset, s.next_offset, s.size_bytes, s.max_timestamp_ms())
                for s in self._segment_list[:-1]]

    def swap_cleaned(self, base_offset: int, size_bytes: int, cleaned: Path) -> bool:
        """Put a cleaned rewrite in place of its segment (segments.py); False if the segment changed meanwhile."""
        self._assert_open()
        return self._segments.swap_cleaned(base_offset, size_bytes, cleaned)

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
        new_end_offset = self._segments.cut_to(offset)
        if self._leader_epoch_cache.truncate_from_end(new_end_offset):
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = min(self._recovery_point, new_end_offset)
        logger.info("%s: truncated to offset %d (asked for %d)", self.directory, new_end_offset, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and the epoch cache; the log restarts empty at `offset`."""
        self._assert_open()
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        self._segments.restart_at(offset)
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
        """Write the epoch cache's checkpoint. An append that starts a new epoch only marks it dirty, and
        the next flush (policy, roll, `close`, `fsync=True`) writes it durably with the records; until
        then recovery, which scans every batch above the recovery point, rebuilds the entries from their
        headers (docs/perf/epoch-checkpoint.md). Truncations still write it durably at once (KIP-101).
        """
        write_leader_epoch_checkpoint(self.directory / LEADER_EPOCH_CHECKPOINT_FILE,
                                      self._leader_epoch_cache.entries(), durable=durable)
        self._epoch_checkpoint_dirty = not durable

    # -- durability, retention, checks -----------------------------------------

    def flush(self) -> None:
        """fsync the active segment and its index (and any rolled segment not yet synced);
        everything below the LEO is then durable."""
        self._assert_open()
        self._segments.flush()
        if self._epoch_checkpoint_dirty:
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = self.log_end_offset
        self._flush_policy.on_flush(self._clock.monotonic_ms())

    @property
    def has_rolled_segments_to_sync(self) -> bool:
        """A cheap check before `rolled_segments_to_sync` (a periodic caller skips idle logs)."""
        return self._segments.has_rolled_to_sync

    def rolled_segments_to_sync(self) -> tuple[int, list[tuple[int, int]]]:
        """Rolled segments whose fsync is still pending, as (duplicated fd, next offset), oldest first.

        The caller fsyncs and closes the descriptors without holding the log, then
        reports with `rolled_segments_synced(token, ...)`; `token` ties the report to
        this layout (a truncation or deletion in between voids it).
        """
        self._assert_open()
        return self._segments.rolled_to_sync()

    def rolled_segments_synced(self, token: int, next_offset: int) -> None:
        """The rolled segments listed under `token`, up to `next_offset`, are now on disk."""
        self._assert_open()
        if self._segments.rolled_synced(token, next_offset):
            self._recovery_point = max(self._recovery_point, next_offset)

    def maybe_flush(self) -> bool:
        """Flush if the interval policy says it is time; for a periodic caller. True if flushed."""
        if self._flush_policy.is_due(self._clock.monotonic_ms()):
            self.flush()
            return True
        return False

    def update_config(self, config: LogConfig) -> None:
        """The topic's settings changed: they apply from the next append, flush or retention run."""
        self._assert_open()
        self.config = config
        self._segments.update_config(config)
        self._flush_policy.reconfigure(config.flush_messages, config.flush_interval_ms)

    def rolled_segment_after(self, base_offset: int) -> tuple[int, int, int, str] | None:
        """The scrubber's next segment (Segments.rolled_after); the caller closes the descriptor."""
        return self._segments.rolled_after(base_offset)

    def verify(self) -> list[CorruptionReport]:
        """Deep-check every batch of every segment (CRC, records, contiguous offsets); change nothing."""
        self._assert_open()
        return self._segments.verify()

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        self._segments.close()
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
            self._segments.close()
            self._closed = True

    def _assert_open(self) -> None:
        assert not self._closed, f"{self.directory}: log used after close"

    def __repr__(self) -> str:
        return f"PartitionLog({self.directory}, {self.log_start_offset}..{self.log_end_offset}, {len(self._segments)})"
