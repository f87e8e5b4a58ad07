"""Reading a segment file batch by batch to judge it: where its valid data ends (recovery) and what in it
is wrong (verification).

Theory of operation (docs/architecture.md, "Storage", start-up recovery):

`scan_valid_prefix` walks a segment from its start and stops at the first batch
that is torn (shorter than its header says), corrupt (bad CRC or framing) or out
of sequence (not starting where the previous one ended; in a compacted log,
whose cleaned segments have gaps between batches (compaction.py), not
starting at or a little above it: `out_of_sequence`). What it reports (how
far the file is valid, the index entries and leader-epoch starts seen on the
way) is all `LogSegment.recover` needs to cut the file and rebuild its index;
the scan itself changes nothing. `verify_batches` walks a whole segment and
reports every problem, skipping a batch with a bad body and stopping only at a
header that cannot be trusted; it too changes nothing.

Scans read the file in chunks (`ChunkReader`) rather than a system call per
batch or the whole file at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from replog.common.records import (
    HEADER_SIZE,
    MAGIC,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptRecordError,
    check_batch,
    read_header,
    validate_batch,
)

from .results import CorruptionReport

SCAN_CHUNK_BYTES = 1024 * 1024
GAP_MAX = 2**31  # a gap the cleaner leaves stays inside one segment's 32-bit relative offsets


class TornReadError(CorruptRecordError):
    """The file holds fewer bytes than the segment knows it wrote: it was cut or damaged under the log."""


class ChunkReader:
    """Reads [pos, pos + n) of a file out of a cached chunk, refilling as needed."""

    def __init__(self, fd: int, end_position: int, chunk_bytes: int) -> None:
        self._fd = fd
        self._end_position = end_position
        self._chunk_bytes = chunk_bytes
        self._chunk = b""
        self._chunk_start = 0

    def get(self, position: int, length: int) -> tuple[bytes, int]:
        """A buffer and the index of `position` in it, holding min(length, end - position) bytes."""
        offset = position - self._chunk_start
        if offset >= 0 and offset + length <= len(self._chunk):
            return self._chunk, offset
        read_bytes = min(max(length, self._chunk_bytes), self._end_position - position)
        self._chunk = os.pread(self._fd, read_bytes, position)
        self._chunk_start = position
        return self._chunk, 0


class ValidPrefix(NamedTuple):
    """How much of a segment holds whole, valid, contiguous batches, and what was seen in them."""

    size_bytes: int
    next_offset: int
    batches_scanned: int
    reason: str | None  # why the scan stopped before the file's end; None when it did not
    index_entries: list[tuple[int, int]]
    bytes_since_index_entry: int
    leader_epoch_starts: list[tuple[int, int]]  # (leader_epoch, base_offset) wherever the epoch went up


def scan_valid_prefix(fd: int, size_bytes: int, base_offset: int, index_interval_bytes: int,
                      gaps: bool = False) -> ValidPrefix:
    reader = ChunkReader(fd, size_bytes, SCAN_CHUNK_BYTES)
    position, next_offset, batches_scanned = 0, base_offset, 0
    index_entries: list[tuple[int, int]] = []
    leader_epoch_starts: list[tuple[int, int]] = []
    bytes_since_index_entry = 0
    reason = None
    while position < size_bytes:
        header, reason = _batch_at(reader, size_bytes, position, next_offset, gaps)
        if header is None:
            break
        if bytes_since_index_entry >= index_interval_bytes and position > 0:
            index_entries.append((header.base_offset, position))
            bytes_since_index_entry = 0
        if not leader_epoch_starts or header.partition_leader_epoch > leader_epoch_starts[-1][0]:
            leader_epoch_starts.append((header.partition_leader_epoch, header.base_offset))
        bytes_since_index_entry += header.size_bytes
        position += header.size_bytes
        next_offset = header.next_offset
        batches_scanned += 1
    return ValidPrefix(position, next_offset, batches_scanned, reason, index_entries, bytes_since_index_entry,
                       leader_epoch_starts)


def _batch_at(
    reader: ChunkReader, size_bytes: int, position: int, expected_offset: int, gaps: bool
) -> tuple[BatchHeader | None, str | None]:
    """The valid batch at `position`, or None and why there is none."""
    remaining_bytes = size_bytes - position
    if remaining_bytes < HEADER_SIZE:
        return None, f"torn tail: {remaining_bytes} bytes at position {position}, less than a batch header"
    buf, at = reader.get(position, HEADER_SIZE)
    header = read_header(buf, at)
    if header.magic == MAGIC and header.batch_length >= MIN_BATCH_LENGTH and header.size_bytes > remaining_bytes:
        return None, (
            f"torn tail: batch at position {position} needs {header.size_bytes} bytes, "
            f"{remaining_bytes} remain"
        )
    buf, at = reader.get(position, max(header.size_bytes, HEADER_SIZE))
    try:
        validate_batch(buf, at, check_records=False)
    except CorruptRecordError as exc:
        return None, f"corrupt batch at position {position}: {exc}"
    if out_of_sequence(header.base_offset, expected_offset, gaps):
        return None, (
            f"corrupt batch at position {position}: base offset {header.base_offset}, "
            f"expected {expected_offset}{' or more' if gaps else ''}"
        )
    return header, None


def verify_batches(fd: int, size_bytes: int, name: str, expected_offset: int,
                   gaps: bool = False) -> tuple[list[CorruptionReport], int]:
    """Every problem found (CRC, records, offsets) and the offset after the last batch read."""
    reports = []
    reader = ChunkReader(fd, size_bytes, SCAN_CHUNK_BYTES)
    position = 0
    while position < size_bytes:
        remaining_bytes = size_bytes - position
        if remaining_bytes < HEADER_SIZE:
            reports.append(CorruptionReport(name, position, f"{remaining_bytes} trailing bytes"))
            break
        buf, at = reader.get(position, HEADER_SIZE)
        header = read_header(buf, at)
        header_readable = header.magic == MAGIC and header.batch_length >= MIN_BATCH_LENGTH
        if header_readable and header.size_bytes > remaining_bytes:
            reports.append(CorruptionReport(
                name, position, f"incomplete batch: {header.size_bytes} bytes, {remaining_bytes} remain"))
            break
        if not header_readable:
            reports.append(
                CorruptionReport(
                    name,
                    position,
                    f"unreadable batch header (magic {header.magic}, batch_length {header.batch_length})",
                )
            )
            break
        buf, at = reader.get(position, header.size_bytes)
        try:
            validate_batch(buf, at)
        except CorruptRecordError as exc:
            reports.append(CorruptionReport(name, position, str(exc)))
        if out_of_sequence(header.base_offset, expected_offset, gaps):
            reports.append(CorruptionReport(
                name, position, f"base offset {header.base_offset}, expected {expected_offset}"))
        expected_offset = header.next_offset
        position += header.size_bytes
    return reports, expected_offset


def checked_prefix(data: bytes, start_offset: int, gaps: bool = False) -> tuple[int, int, str | None]:
    """How many leading bytes of `data` (whole batches read from the log, the first holding `start_offset`)
    pass their checks (framing, CRC, contiguous offsets): (valid bytes, the offset where a bad batch
    starts, why it is bad), the reason None when all of `data` passes. The CRC covers the records, so
    they are not walked."""
    position, expected_offset = 0, None
    while position < len(data):
        where = start_offset if expected_offset is None else expected_offset
        if len(data) - position < HEADER_SIZE:
            return position, where, f"{len(data) - position} bytes at the end, less than a batch header"
        header = read_header(data, position)
        try:
            check_batch(data, header, position, check_records=False)
        except CorruptRecordError as exc:
            return position, where, str(exc)
        if expected_offset is None:  # a gap (records the log cleaner removed) may come before the first
            contiguous = header.base_offset <= start_offset <= header.last_offset or (
                gaps and start_offset < header.base_offset < start_offset + GAP_MAX)
        else:
            contiguous = not out_of_sequence(header.base_offset, expected_offset, gaps)
        if not contiguous:
            return position, where, f"batch at position {position} has base offset {header.base_offset}"
        expected_offset = header.next_offset
        position += header.size_bytes
    return position, -1, None


def index_entries(headers: Iterator[tuple[int, BatchHeader]], index_interval_bytes: int,
                  base_offset: int, gaps: bool = False) -> tuple[list[tuple[int, int]], int, str | None]:
    """The index entries of a segment from its (position, header) pairs, the bytes after the last entry,
    and the damage that ended the walk early (None when it reached the end). A batch out of sequence
    (its base offset, outside the CRC, damaged) ends the walk too: an entry for it would send a read of
    its false offsets there, past the batch that really holds them."""
    entries: list[tuple[int, int]] = []
    bytes_since_index_entry = 0
    expected_offset = base_offset
    try:
        for position, header in headers:
            if out_of_sequence(header.base_offset, expected_offset, gaps):
                return entries, bytes_since_index_entry, (f"batch at position {position} has base offset "
                                                          f"{header.base_offset}, expected {expected_offset}")
            expected_offset = header.next_offset
            if bytes_since_index_entry >= index_interval_bytes and position > 0:
                entries.append((header.base_offset, position))
                bytes_since_index_entry = 0
            bytes_since_index_entry += header.size_bytes
    except CorruptRecordError as exc:
        return entries, bytes_since_index_entry, str(exc)
    return entries, bytes_since_index_entry, None


def out_of_sequence(base_offset: int, expected_offset: int, gaps: bool) -> bool:
    """A batch does not start where the previous one ended: below is always damage, above only where the
    log cleaner leaves gaps (`gaps`, a compacted log), and there by less than GAP_MAX (a base offset lies
    outside the CRC: a flipped high bit must still read as damage)."""
    if gaps:
        return not expected_offset <= base_offset < expected_offset + GAP_MAX
    return base_offset != expected_offset


def batch_holding(headers: Iterator[tuple[int, BatchHeader]], name: str, offset: int,
                  expected_offset: int, gaps: bool = False) -> tuple[int, BatchHeader] | None:
    """(position, header) of the batch holding `offset`, walking `headers` whose first batch starts at
    `expected_offset`; None past the end. A batch out of sequence is damage (its base offset lies outside
    the CRC): CorruptRecordError rather than the wrong records."""
    for position, header in headers:
        if out_of_sequence(header.base_offset, expected_offset, gaps):
            raise CorruptRecordError(f"{name}: batch at position {position} has base offset "
                                     f"{header.base_offset}, expected {expected_offset}")
        if header.last_offset >= offset:
            return position, header
        expected_offset = header.next_offset
    return None
