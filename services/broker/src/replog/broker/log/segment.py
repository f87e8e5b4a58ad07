"""One segment: the file `<base_offset>.log` of whole batches plus its offset index.

Theory of operation
-------------------
A segment holds contiguous offsets [base_offset, next_offset) as whole
batches appended back to back; its name is its base offset, 20 digits zero
padded so that names sort like offsets. Only the last segment of a log (the
active one) is appended to; the others are immutable until deleted by
retention or truncation.

Invariants (asserted around writes, checked by `recover` and `verify`):
- the file holds exactly `size_bytes` bytes of whole, valid batches;
- the first batch starts at `base_offset`, each next batch at the previous
  batch's `next_offset`;
- every index entry points at the start of a batch.

I/O is positional (`os.pread` / `os.pwrite`) on one descriptor, so reads do
not disturb the append position. Scans read the file in chunks
(segment_scan.ChunkReader) rather than a syscall per batch or the whole file
at once; recovery and verification judge the batches there.
The newest timestamp of an immutable segment is computed on first use and
cached; it is only needed by retention and timestamp lookups.

The active segment also remembers where its last few appended batches lie
(`_tail`: base offset, start and end position, a contiguous run ending at
the file's end). Followers and consumers read almost always from there, and
a read that starts inside it needs one `pread` of the bytes instead of an
index lookup and two header scans (docs/perf/segment-tail.md). A read
starting before the remembered run takes the general path. A roll drops the
old segment's run, truncation cuts it, recovery starts it empty.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from replog.common.records import (
    HEADER_SIZE,
    MAGIC,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptRecordError,
    decode_records,
    read_header,
)

from .descriptors import UNTRACKED, LogDescriptors, Untracked
from .offset_index import OffsetIndex
from .results import CorruptionReport
from .segment_names import INDEX_SUFFIX, SegmentRecovery, segment_file_name
from .segment_scan import ChunkReader, TornReadError, batch_holding, index_entries, scan_valid_prefix, verify_batches

logger = logging.getLogger(__name__)

HEADER_SCAN_CHUNK_BYTES = 64 * 1024
TAIL_BATCHES_MAX = 16  # batches whose place the active segment remembers (see the module docstring)


class LogSegment:
    def __init__(
        self, directory: Path, base_offset: int, fd: int, size_bytes: int, index_interval_bytes: int,
        descriptors: LogDescriptors | Untracked = UNTRACKED,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.name = segment_file_name(base_offset)
        self.log_path = directory / self.name
        self.index_path = directory / segment_file_name(base_offset, INDEX_SUFFIX)
        self.size_bytes = size_bytes
        self.next_offset = base_offset  # set by the log for immutable segments, kept by appends
        self.index = OffsetIndex(self.index_path, base_offset)
        self._fd_open = fd  # -1 while released; opened again on the next use
        self.descriptors = descriptors  # the log's account with the descriptor budget (descriptors.py)
        if fd >= 0:
            descriptors.opened()
        self._closed = False
        self._unsynced = False  # written since the last fsync
        self._index_interval_bytes = index_interval_bytes
        self._bytes_since_index_entry = 0
        self._max_timestamp_ms: int | None = -1 if size_bytes == 0 else None
        self._tail: list[tuple[int, int, int]] = []  # (base offset, start, end) of the last appends
        # a compacted log's segment (Segments.mark_compacted, set by its owner): batches may have gaps between
        # them and end before next_offset, where the log cleaner removed records
        self.gaps_allowed = False

    # -- lifecycle -------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int,
               descriptors: LogDescriptors | Untracked = UNTRACKED) -> LogSegment:
        """A new empty segment (any old files of that name are replaced); on an error no descriptor stays open."""
        fd = os.open(directory / segment_file_name(base_offset), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            index = OffsetIndex.rebuild(directory / segment_file_name(base_offset, INDEX_SUFFIX), base_offset, [])
        except BaseException:
            os.close(fd)
            raise
        segment = cls(directory, base_offset, fd, 0, index_interval_bytes, descriptors)
        segment.index = index
        return segment

    @classmethod
    def open_existing(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> LogSegment:
        """The segment as found on disk; the caller recovers it or loads its index."""
        fd = os.open(directory / segment_file_name(base_offset), os.O_RDWR)
        size_bytes = os.fstat(fd).st_size
        return cls(directory, base_offset, fd, size_bytes, index_interval_bytes)

    @property
    def _fd(self) -> int:
        """The segment file's descriptor, opened on first use after a release."""
        assert not self._closed, f"{self.log_path} is closed"
        if self._fd_open < 0:
            self._fd_open = os.open(self.log_path, os.O_RDWR)
            self.descriptors.opened()
        else:
            self.descriptors.touch()
        return self._fd_open

    @contextlib.contextmanager
    def _reading(self) -> Iterator[int]:
        """A descriptor for reads: the held one if the segment is open for writing,
        else a temporary one closed afterwards, so reading an idle replica (a new
        leader rebuilding its producer state, a fetch) leaves no file open."""
        if self._fd_open >= 0:
            yield self._fd_open
            return
        assert not self._closed, f"{self.log_path} is closed"
        fd = os.open(self.log_path, os.O_RDONLY)
        try:
            yield fd
        finally:
            os.close(fd)

    @property
    def holds_descriptor(self) -> bool:
        return self._fd_open >= 0

    def release_descriptor(self) -> None:
        """Close the file descriptor until the next use; the segment stays usable.

        A broker may host far more replicas than it may open files, so idle
        segments hold none (docs/perf/segment-descriptors.md); the descriptor budget
        calls this on the least recently used logs (descriptors.py). The caller holds
        the log's owner's lock, as for every other call. The index holds no descriptor.
        """
        if self._fd_open >= 0:
            fd, self._fd_open = self._fd_open, -1
            os.close(fd)
            self.descriptors.closed()

    def flush(self) -> None:
        """fsync what was written since the last flush; nothing to do (and no file opened) when clean.

        The descriptor is then released: a replica holds a file open only between
        an append and the next flush, so the periodic flush bounds open files by the
        replicas written to recently, not by all replicas hosted."""
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = False
        self.index.flush()
        self.release_descriptor()

    def duplicate_fd(self) -> int:
        """A new descriptor of the segment file, for an fsync made without the log's owner's lock."""
        return os.dup(self._fd)

    def close(self, *, write_index: bool = True) -> None:
        """Write the index's pending entries (unless the segment is going away) and close; a failure to
        write them (they are only an accelerator) still closes the segment."""
        try:
            if write_index:
                self.index.close()
        finally:
            self.release_descriptor()
            self._closed = True

    def delete(self) -> None:
        self.release_descriptor()
        self._closed = True
        self.index.delete()
        self.log_path.unlink(missing_ok=True)

    # -- writes ----------------------------------------------------------

    def append(self, batch: bytes, header: BatchHeader) -> None:
        """Write one whole, validated batch that starts at `next_offset`."""
        # above next_offset only in a compacted log: a follower continuing across its leader's gaps
        assert header.base_offset == self.next_offset or (self.gaps_allowed and header.base_offset > self.next_offset), (
            header.base_offset, self.next_offset)
        assert len(batch) == header.size_bytes
        fd = self._fd  # first: running out of descriptors (EMFILE) leaves the segment as it was
        position = self.size_bytes
        try:
            view = memoryview(batch)
            written_bytes = 0
            while written_bytes < len(batch):
                written_bytes += os.pwrite(fd, view[written_bytes:], position + written_bytes)
        except OSError:
            # Leave no partial batch behind: the file must hold whole batches only.
            os.ftruncate(fd, position)
            raise
        if self._bytes_since_index_entry >= self._index_interval_bytes and position > 0:
            self.index.append(header.base_offset, position)
            self._bytes_since_index_entry = 0
        self.size_bytes = position + len(batch)
        tail = self._tail
        if len(tail) >= TAIL_BATCHES_MAX:
            del tail[: TAIL_BATCHES_MAX // 2]
        tail.append((header.base_offset, position, self.size_bytes))
        self._unsynced = True
        self._bytes_since_index_entry += len(batch)
        self.next_offset = header.next_offset
        if self._max_timestamp_ms is not None and header.max_timestamp_ms > self._max_timestamp_ms:
            self._max_timestamp_ms = header.max_timestamp_ms

    def truncate_to(self, position: int, next_offset: int) -> None:
        """Cut the file at `position`, a batch boundary; `next_offset` is the offset that starts there."""
        assert 0 <= position <= self.size_bytes
        os.ftruncate(self._fd, position)
        os.fsync(self._fd)
        self.index.truncate_to_position(position)
        self.index.flush()
        self.size_bytes = position
        self.next_offset = next_offset
        self._tail = [entry for entry in self._tail if entry[2] <= position]
        last_entry = self.index.last_entry()
        self._bytes_since_index_entry = position - (last_entry[1] if last_entry else 0)
        self._max_timestamp_ms = -1 if position == 0 else None

    # -- reads -----------------------------------------------------------

    def read_bytes(self, position: int, length: int) -> bytes:
        if self._fd_open >= 0:  # the common case (an active segment), without a context manager per read
            self.descriptors.touch()
            data = os.pread(self._fd_open, length, position)
        else:
            with self._reading() as fd:
                data = os.pread(fd, length, position)
        if len(data) != length:
            raise TornReadError(f"{self.name}: {len(data)} bytes at position {position}, {length} expected")
        return data

    def iter_headers(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `position` (a batch boundary) to the end."""
        if position >= self.size_bytes:
            return
        with self._reading() as fd:
            yield from batch_headers(fd, self.size_bytes, self.name, position, HEADER_SCAN_CHUNK_BYTES)

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the batch holding `offset`, or None if past the end. An index entry that
        leads to no batch (a damaged index) is passed over: the scan starts again from the file's start."""
        start_offset, start = self.index.lookup(offset)
        try:
            return batch_holding(self.iter_headers(start), self.name, offset, start_offset, self.gaps_allowed)
        except CorruptRecordError:
            if start == 0:
                raise
        logger.error("%s: the index entry for offset %d leads to no batch holding it; scanning from the start",
                     self.index_path, offset)
        return batch_holding(self.iter_headers(0), self.name, offset, self.base_offset, self.gaps_allowed)

    def read_batches(
        self, position: int, max_bytes: int, upper_offset: int, take_first: bool
    ) -> tuple[bytes, bool]:
        """Whole batches from `position` that fit in `max_bytes` and start below `upper_offset`.

        With `take_first`, the first batch is returned even if larger than
        `max_bytes`. The flag says whether the read stopped for a limit (True)
        or ran off the end of the segment (False).
        """
        end_position = position
        stopped = False
        for batch_position, header in self.iter_headers(position):
            if header.base_offset >= upper_offset:
                stopped = True
                break
            fits = batch_position + header.size_bytes - position <= max_bytes
            if not fits and not (take_first and batch_position == position):
                stopped = True
                break
            end_position = batch_position + header.size_bytes
        if end_position == position:
            return b"", stopped
        return self.read_bytes(position, end_position - position), stopped

    def read_tail(self, offset: int, max_bytes: int, upper_offset: int) -> tuple[bytes, bool] | None:
        """`read_batches` from the batch holding `offset` (first batch always taken), answered from
        the remembered tail; None when `offset` is not in it (the caller takes the general path)."""
        tail = self._tail
        if not tail or offset < tail[0][0] or offset >= self.next_offset:
            return None
        k = bisect.bisect_right(tail, offset, key=_first) - 1
        start = end = tail[k][1]
        stopped = False
        for base_offset, _, batch_end in tail[k:]:
            if base_offset >= upper_offset or (end > start and batch_end - start > max_bytes):
                stopped = True
                break
            end = batch_end
        if end == start:
            return b"", stopped
        return self.read_bytes(start, end - start), stopped

    def forget_tail(self) -> None:
        """No more appends here (the log rolled): the remembered run is not worth its memory."""
        self._tail = []

    def max_timestamp_ms(self) -> int:
        """The newest record timestamp in the segment; -1 when empty."""
        if self._max_timestamp_ms is None:
            self._max_timestamp_ms = max(
                (header.max_timestamp_ms for _, header in self.iter_headers()), default=-1
            )
        return self._max_timestamp_ms

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record stamped at or after `timestamp_ms`."""
        for position, header in self.iter_headers():
            if header.record_count and header.max_timestamp_ms >= timestamp_ms:  # an empty batch has none
                for record in decode_records(self.read_bytes(position, header.size_bytes)):
                    if record.timestamp_ms >= timestamp_ms:
                        return record.offset, record.timestamp_ms
                raise CorruptRecordError(f"{self.name}: batch at {position} has no record at its max timestamp")
        return None

    # -- recovery and checks ---------------------------------------------

    def recover(self) -> SegmentRecovery:
        """Validate every batch, cut a torn or corrupt tail, rebuild the index (segment_scan.py).

        Afterwards the file holds only valid, contiguous batches and
        `next_offset` is the offset after the last of them.
        """
        valid = scan_valid_prefix(self._fd, self.size_bytes, self.base_offset, self._index_interval_bytes,
                                  self.gaps_allowed)
        bytes_dropped = self.size_bytes - valid.size_bytes
        if bytes_dropped:
            os.ftruncate(self._fd, valid.size_bytes)
            os.fsync(self._fd)
            self.size_bytes = valid.size_bytes
        self.next_offset = valid.next_offset
        self.index = OffsetIndex.rebuild(self.index_path, self.base_offset, valid.index_entries)
        self._bytes_since_index_entry = valid.bytes_since_index_entry
        self._max_timestamp_ms = None if valid.size_bytes else -1
        return SegmentRecovery(
            valid.batches_scanned, bytes_dropped, valid.reason,
            tuple(e for e in valid.leader_epoch_starts if e[0] >= 0),
        )

    def load_index(self) -> bool:
        """Load the index file if it is consistent with the segment, else rebuild it; True if rebuilt."""
        index = OffsetIndex.load(self.index_path, self.base_offset)
        if index is not None and self._index_matches(index):
            self.index = index
            last_entry = index.last_entry()
            self._bytes_since_index_entry = self.size_bytes - (last_entry[1] if last_entry else 0)
            return False
        entries, bytes_since_index_entry, damage = index_entries(self.iter_headers(), self._index_interval_bytes,
                                                                 self.base_offset, self.gaps_allowed)
        if damage:  # kept as it is: reads stop there, verify() and the scrubber report it
            logger.error("%s: damaged after it was written, indexed up to the damage: %s", self.log_path, damage)
        self.index = OffsetIndex.rebuild(self.index_path, self.base_offset, entries)
        self._bytes_since_index_entry = bytes_since_index_entry
        logger.info("%s: rebuilt offset index (%d entries)", self.log_path, len(entries))
        return True

    def _index_matches(self, index: OffsetIndex) -> bool:
        """Cheap check: the last entry must point at a batch starting at its offset."""
        last_entry = index.last_entry()
        if last_entry is None:
            return True
        offset, position = last_entry
        if position + HEADER_SIZE > self.size_bytes:
            return False
        header = read_header(self.read_bytes(position, HEADER_SIZE))
        return header.magic == MAGIC and header.base_offset == offset

    def verify(self, expected_offset: int) -> tuple[list[CorruptionReport], int]:
        """Deep-check every batch (CRC, records, offsets) without changing anything (segment_scan.py).

        Returns the problems found and the offset after the last batch read.
        A batch with a bad body is skipped and the scan goes on from the next
        one; a header that cannot be trusted ends the scan of this segment.
        """
        return verify_batches(self._fd, self.size_bytes, self.name, expected_offset, self.gaps_allowed)


def _first(entry: tuple[int, int, int]) -> int:
    return entry[0]


def batch_headers(fd: int, size_bytes: int, name: str, position: int = 0,
                  chunk_bytes: int = HEADER_SCAN_CHUNK_BYTES) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch of the open segment file `fd` from `position` (a batch boundary)
    to `size_bytes`, read in chunks; `name` names the file in errors."""
    reader = ChunkReader(fd, size_bytes, chunk_bytes)
    while position < size_bytes:
        buf, at = reader.get(position, HEADER_SIZE)
        if len(buf) - at < HEADER_SIZE:
            raise TornReadError(f"{name}: the file ends inside the batch header at {position}")
        header = read_header(buf, at)
        if header.magic != MAGIC or header.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"{name}: no batch at position {position}")
        yield position, header
        position += header.size_bytes
