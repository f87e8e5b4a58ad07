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
uint32 position). The file is only an accelerator: it is flushed with its
segment, checked when loaded (`load` refuses a torn or non-monotonic file),
and rebuilt from the segment whenever it is missing or doubtful.
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
        self._fd: int | None = None

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
        self._add(offset, position)
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        _write_all(self._fd, _ENTRY.pack(self._relative_offsets[-1], position))

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
        if self.path.exists():
            os.truncate(self.path, keep * ENTRY_SIZE)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
