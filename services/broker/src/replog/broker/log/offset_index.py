"""The sparse offset index of one segment: offset -> file position of a batch.

Theory of operation
-------------------
Every `index_interval_bytes` of appended data the segment adds an entry
(offset relative to the segment base, position of the batch that starts at
that offset). A lookup finds the last entry at or below the target offset;
the segment then scans batch headers forward from its position, so at most
about `index_interval_bytes` are walked per lookup. The first batch of a
segment is never indexed: position 0 is the implied first entry.

The index lives in memory (two arrays, binary-searched) and is mirrored,
append-only, in `<base>.index` as 8-byte entries (int32 relative offset,
uint32 position). The file is only an accelerator: it is checked when loaded
(`load` refuses a torn or non-monotonic file), and rebuilt from the segment
whenever it is missing or doubtful.

The index holds no file descriptor. New entries wait in memory and are written
(a short-lived descriptor) when the segment is flushed, rolled or closed, so a
busy replica holds one descriptor, its segment's, not two
(docs/perf/segment-descriptors.md). Entries not yet written are lost in a crash
only above the recovery point, where recovery rebuilds the index from the log
anyway; below it the file is a prefix of the entries, which loads as a sparser
but correct index.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

_ENTRY = struct.Struct(">iI")
ENTRY_SIZE = _ENTRY.size


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._relative_offsets = array("q")
        self._positions = array("q")
        self._written = 0  # entries the file holds; the others wait for `write_pending`
        self._unsynced = False  # entries written since the last fsync

    @classmethod
    def load(cls, path: Path, base_offset: int) -> OffsetIndex | None:
        """The index stored at `path`, or None if it is missing, torn or not increasing."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) % ENTRY_SIZE:
            return None
        index = cls(path, base_offset)
        previous_relative, previous_position = 0, 0
        for relative_offset, position in _ENTRY.iter_unpack(data):
            if relative_offset <= previous_relative or position <= previous_position:
                return None
            index._relative_offsets.append(relative_offset)
            index._positions.append(position)
            previous_relative, previous_position = relative_offset, position
        index._written = len(index._positions)
        return index

    @classmethod
    def rebuild(cls, path: Path, base_offset: int, entries: list[tuple[int, int]]) -> OffsetIndex:
        """A new index of (offset, position) entries, replacing any file at `path`."""
        index = cls(path, base_offset)
        for offset, position in entries:
            index._add(offset, position)
        data = b"".join(_ENTRY.pack(r, p) for r, p in zip(index._relative_offsets, index._positions))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            if data:  # an empty index holds nothing to lose (and is rebuilt from the log)
                os.fsync(fd)
        finally:
            os.close(fd)
        index._written = len(index._positions)
        return index

    def __len__(self) -> int:
        return len(self._positions)

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs, in order."""
        return [(self.base_offset + r, p) for r, p in zip(self._relative_offsets, self._positions)]

    def last_entry(self) -> tuple[int, int] | None:
        if not self._positions:
            return None
        return self.base_offset + self._relative_offsets[-1], self._positions[-1]

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below `offset`; (base, 0) if none."""
        i = bisect.bisect_right(self._relative_offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._relative_offsets[i], self._positions[i]

    def append(self, offset: int, position: int) -> None:
        """Add an entry in memory; the file gets it with the next `write_pending` or `flush`."""
        self._add(offset, position)

    def _add(self, offset: int, position: int) -> None:
        relative_offset = offset - self.base_offset
        assert 0 < relative_offset < 2**31, f"offset {offset} outside segment {self.base_offset}"
        assert 0 < position < 2**32, f"position {position} not indexable"
        if self._positions:
            assert relative_offset > self._relative_offsets[-1] and position > self._positions[-1]
        self._relative_offsets.append(relative_offset)
        self._positions.append(position)

    def truncate_to_position(self, position: int) -> None:
        """Drop the entries pointing at or beyond `position`."""
        keep = bisect.bisect_left(self._positions, position)
        if keep == len(self._positions):
            return
        del self._relative_offsets[keep:]
        del self._positions[keep:]
        if keep < self._written:
            if self.path.exists():
                os.truncate(self.path, keep * ENTRY_SIZE)
            self._written = keep

    @property
    def pending(self) -> int:
        """Entries in memory the file does not hold yet."""
        return len(self._positions) - self._written

    def write_pending(self, *, fsync: bool = False) -> None:
        """Append the entries the file lacks, through a descriptor closed again at once. On an error
        (EMFILE included) nothing is counted as written, so a later call writes them again."""
        if not self.pending and not (fsync and self._unsynced):
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if self.pending:
                written = self._written
                data = b"".join(_ENTRY.pack(self._relative_offsets[i], self._positions[i])
                                for i in range(written, len(self._positions)))
                os.ftruncate(fd, written * ENTRY_SIZE)  # a torn earlier attempt leaves no partial entry
                _write_all(fd, data)
                self._written = len(self._positions)
                self._unsynced = True
            if fsync:
                os.fsync(fd)
                self._unsynced = False
        finally:
            os.close(fd)

    def flush(self) -> None:
        """Write the pending entries and fsync the file."""
        self.write_pending(fsync=True)

    def close(self) -> None:
        """Write the pending entries (no fsync: the index is only an accelerator)."""
        self.write_pending()

    def delete(self) -> None:
        self._written = len(self._positions)  # nothing left to write
        self.path.unlink(missing_ok=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
