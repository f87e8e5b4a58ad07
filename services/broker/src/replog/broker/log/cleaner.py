"""One cleaning pass over one compacted log: read, decide (compaction.py), rewrite, swap.

Theory of operation
-------------------
The pass holds the log's owner's lock only for short steps, through the
`run_locked` it is given (the broker's `HostedPartition.run`; a test passes
a plain call): a snapshot (duplicated descriptors of the rolled segments,
the producer ids of the active segment's batches, the upper offset), and one
swap per rewritten segment. Everything else (reading segments, building the
key map, writing the rewrites, the throttle's waits) runs without it, so
produce and fetch go on. Rolled segments are immutable, so what a duplicated
descriptor reads stays true; a segment deleted or cut meanwhile (retention,
truncation) is noticed at its swap, which then discards the rewrite.

A rewrite keeps each kept record's offset. A batch whose records all stay is
copied byte for byte (its CRC, codec and attributes unchanged); otherwise
each run of consecutive kept records becomes a batch of its own, with the
original's leader epoch, producer id and epoch, its codec and timestamp
type, and the base sequence of the run's first record, so a batch always
holds consecutive offsets and the log has gaps only between batches. Of each
producer's latest batch (compaction.py) whatever is left of its offsets after its
last kept record becomes an empty batch (batch.py) ending at the original's last
offset, with the sequence there: the producer's state can be rebuilt from the
log, and none of its records stays for its sake. An empty batch no longer its
producer's latest goes.

Crash safety (segments.py `swap_cleaned`, recovery.py): a rewrite is written
to `<segment>.log.cleaned` and fsynced; its rename to `.swap` decides the
swap; the old index is removed and the rewrite renamed over the segment.
Recovery discards a `.cleaned` file and finishes a `.swap`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from replog.common.records import (
    ATTRIBUTE_COMPRESSION_MASK,
    ATTRIBUTE_LOG_APPEND_TIME,
    BatchHeader,
    CorruptRecordError,
    decode_records,
    encode_batch,
    encode_empty_batch,
    read_header,
    with_log_append_time,
)

from .compaction import CleanableSegment, KeyOffsets, cleanable_prefix, keeps_record, kept_runs, producer_last_batches
from .segment import batch_headers
from .segment_names import CLEANED_SUFFIX
from .segment_scan import SCAN_CHUNK_BYTES

logger = logging.getLogger(__name__)

T = TypeVar("T")
SEQUENCE_MODULUS = 2**31  # sequences wrap past 2**31 - 1 to 0 (core/produce/producer_state.py)


class CleaningStopped(Exception):
    """The cleaner is stopping: the pass ends where it is (a `.cleaned` file left is recovery's to discard)."""


class Throttle:
    """At most `bytes_per_second` read plus written (0: no limit); `sleep` and `monotonic_s` come in.
    `stopping`: checked at every step, CleaningStopped once it says so."""

    def __init__(self, bytes_per_second: int, monotonic_s: Callable[[], float], sleep: Callable[[float], None],
                 stopping: Callable[[], bool] = lambda: False):
        self._rate = bytes_per_second
        self._monotonic_s = monotonic_s
        self._sleep = sleep
        self._stopping = stopping
        self._start_s = monotonic_s()
        self._bytes = 0

    def spend(self, byte_count: int) -> None:
        if self._stopping():
            raise CleaningStopped()
        if self._rate <= 0:
            return
        self._bytes += byte_count
        ahead_s = self._bytes / self._rate - (self._monotonic_s() - self._start_s)
        if ahead_s > 0:
            self._sleep(ahead_s)
        if self._bytes > 64 * self._rate:  # start a new window now and then: a long idle spell earns no burst
            self._start_s, self._bytes = self._monotonic_s(), 0


@dataclass
class SegmentSnapshot:
    base_offset: int
    next_offset: int
    size_bytes: int
    fd: int  # a duplicated descriptor, closed by the pass


@dataclass
class PassResult:
    segments_rewritten: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    first_dirty_offset: int = -1  # where the next pass's dirty part starts
    swaps_discarded: int = 0
    oldest_tombstone_ms: int | None = None  # the oldest timestamp of a tombstone the cleaned part keeps
    segments: list[CleanableSegment] = field(default_factory=list)


def clean_log(log, run_locked: Callable[[Callable[[], T]], T], *, upper_offset: Callable[[], int], now_ms: int,
              keys_max: int, throttle: Throttle, first_dirty_offset: int) -> PassResult:
    """One pass over `log` (a PartitionLog); see the module docstring. `upper_offset` is read under the lock
    (the HW). Returns what it did; `first_dirty_offset` of the result is where the map ended."""
    snapshots, active_producers = run_locked(lambda: log.cleaning_snapshot())
    result = PassResult(first_dirty_offset=first_dirty_offset)
    try:
        upper = run_locked(upper_offset)
        summaries, producer_batches = _summaries(snapshots)
        config = log.config
        count = cleanable_prefix(summaries, upper_offset=upper, now_ms=now_ms,
                                 min_compaction_lag_ms=config.min_compaction_lag_ms)
        result.segments = summaries[:count]
        if count == 0:
            return result
        offsets = KeyOffsets(keys_max)
        dirty = [s for s in snapshots[:count] if s.next_offset > first_dirty_offset]
        for snapshot in dirty:
            if not offsets.try_add_segment(_keys(snapshot, throttle), snapshot.next_offset):
                break
        # no dirty segment: a pass over the clean part still removes the tombstones past delete.retention.ms
        clean_end = offsets.end_offset if offsets.end_offset >= 0 else min(first_dirty_offset, upper)
        producers_last = producer_last_batches(producer_batches + active_producers)
        for snapshot in snapshots[:count]:
            if snapshot.base_offset >= clean_end:
                break
            written = _rewrite(log.directory, snapshot, offsets, producers_last, now_ms, config.delete_retention_ms,
                               throttle, result)
            if written is None:
                continue
            path, size_bytes = written
            if run_locked(lambda s=snapshot, p=path: log.swap_cleaned(s.base_offset, s.size_bytes, p)):
                result.segments_rewritten += 1
                result.bytes_written += size_bytes
            else:
                result.swaps_discarded += 1
        result.first_dirty_offset = max(clean_end, first_dirty_offset)
        return result
    finally:
        for snapshot in snapshots:
            os.close(snapshot.fd)


def _headers(snapshot: SegmentSnapshot) -> Iterator[tuple[int, BatchHeader]]:
    return batch_headers(snapshot.fd, snapshot.size_bytes, f"segment {snapshot.base_offset}", 0, SCAN_CHUNK_BYTES)


def _summaries(snapshots: list[SegmentSnapshot]) -> tuple[list[CleanableSegment], list[tuple[int, int]]]:
    summaries, producers = [], []
    for snapshot in snapshots:
        max_timestamp_ms = -1
        for _, header in _headers(snapshot):
            max_timestamp_ms = max(max_timestamp_ms, header.max_timestamp_ms)
            producers.append((header.producer_id, header.base_offset))
        summaries.append(CleanableSegment(snapshot.base_offset, snapshot.next_offset, snapshot.size_bytes,
                                          max_timestamp_ms))
    return summaries, producers


def _batches(snapshot: SegmentSnapshot, throttle: Throttle) -> Iterator[tuple[BatchHeader, bytes]]:
    for position, header in _headers(snapshot):
        data = os.pread(snapshot.fd, header.size_bytes, position)
        if len(data) != header.size_bytes:
            raise CorruptRecordError(f"segment {snapshot.base_offset}: a batch at {position} is cut short")
        throttle.spend(len(data))
        yield header, data


def _keys(snapshot: SegmentSnapshot, throttle: Throttle) -> Iterator[tuple[bytes | None, int]]:
    for _, data in _batches(snapshot, throttle):
        for record in decode_records(data):  # the CRC is checked: a damaged batch stops the pass
            yield record.key, record.offset


def _rewrite(directory: Path, snapshot: SegmentSnapshot, offsets: KeyOffsets, producers_last: frozenset[int],
             now_ms: int, delete_retention_ms: int, throttle: Throttle, result: PassResult) -> tuple[Path, int] | None:
    """Write the cleaned copy of one segment to `<segment>.log.cleaned` as it is read (memory bounded by a
    batch), fsynced; None, the file removed, when it would keep everything."""
    path = directory / f"{snapshot.base_offset:020d}.log{CLEANED_SUFFIX}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    removed = written_bytes = 0
    changed = False
    try:
        for header, data in _batches(snapshot, throttle):
            result.bytes_read += len(data)
            parts, dropped = _cleaned_batch(header, data, offsets, now_ms, delete_retention_ms, result,
                                            keep_last=header.base_offset in producers_last)
            removed += dropped
            changed = changed or len(parts) != 1 or parts[0] is not data
            for part in parts:
                _write_all(fd, part)
                written_bytes += len(part)
                throttle.spend(len(part))
        if changed:
            os.fsync(fd)
    finally:
        os.close(fd)
    if not changed:
        path.unlink()
        return None
    result.records_removed += removed
    return path, written_bytes


def _cleaned_batch(header: BatchHeader, data: bytes, offsets: KeyOffsets, now_ms: int, delete_retention_ms: int,
                   result: PassResult, *, keep_last: bool) -> tuple[list[bytes], int]:
    """What a batch becomes (itself, its kept runs, maybe ending in an empty batch, or nothing) and how many
    records it lost. `keep_last`: the batch is its producer's latest (see the module docstring)."""
    records = decode_records(data)
    kept = [r for r in records if keeps_record(r.key, r.value is None, r.offset, r.timestamp_ms, offsets,
                                               now_ms=now_ms, delete_retention_ms=delete_retention_ms)]
    for record in kept:
        if record.value is None and (result.oldest_tombstone_ms is None
                                     or record.timestamp_ms < result.oldest_tombstone_ms):
            result.oldest_tombstone_ms = record.timestamp_ms
    if len(kept) == len(records) and (records or keep_last):
        return [data], 0
    parts = _reencoded(header, kept) if kept else []
    tail_offset = kept[-1].offset + 1 if kept else header.base_offset
    if keep_last and tail_offset <= header.last_offset:
        parts.append(_empty_tail(header, tail_offset))
    return parts, len(records) - len(kept)


def _empty_tail(header: BatchHeader, first_offset: int) -> bytes:
    """An empty batch over the offsets of `header`'s batch from `first_offset` on, ending at its last offset
    with its last sequence (batch.py)."""
    return encode_empty_batch(base_offset=first_offset, last_offset_delta=header.last_offset - first_offset,
                              leader_epoch=header.partition_leader_epoch, timestamp_ms=header.max_timestamp_ms,
                              producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                              base_sequence=_sequence_at(header, first_offset))


def _sequence_at(header: BatchHeader, offset: int) -> int:
    """The sequence of the record at `offset` of `header`'s batch (-1 without sequences)."""
    if header.base_sequence < 0:
        return header.base_sequence
    return (header.base_sequence + offset - header.base_offset) % SEQUENCE_MODULUS


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reencoded(header: BatchHeader, kept: list) -> list[bytes]:
    """Each run of consecutive kept records of a batch as a batch of its own (see the module docstring)."""
    batches = []
    for start, end in kept_runs([r.offset for r in kept]):
        run = kept[start:end]
        first_offset = run[0].offset
        base_sequence = _sequence_at(header, first_offset)
        batch = encode_batch([(r.key, r.value, r.timestamp_ms, r.headers or None) for r in run],
                             base_offset=first_offset, leader_epoch=header.partition_leader_epoch,
                             producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                             base_sequence=base_sequence, compression=header.attributes & ATTRIBUTE_COMPRESSION_MASK)
        if header.attributes & ATTRIBUTE_LOG_APPEND_TIME:
            batch, _ = with_log_append_time(batch, read_header(batch), header.max_timestamp_ms)
        batches.append(batch)
    return batches
