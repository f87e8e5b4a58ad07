"""What a power loss would take away: per file, the state it had at its last fsync.

Theory of operation
-------------------
The filesystem (fs.py) writes every change straight through to the backing
directory, so reads need no overlay. Before a change lands, the journal keeps
what it needs to undo it: for a file with no unsynced change yet it notes the
size the file had (its *durable size*); for every write or truncation that
touches bytes below that size it keeps the bytes as they were (first touch
wins, as the entries are undone newest first). An fsync of the file forgets
all of it: what is there now is durable. A power loss undoes it: the kept
bytes go back, newest entry first, and the file is cut to its durable size.

Names follow a simpler model than a real filesystem's (and LazyFS's, where
every metadata operation waits for the parent directory's fsync):

- a file created since the last power loss is durable once the file itself
  or its parent directory is fsynced; until then a power loss removes it;
- rename, unlink, mkdir and rmdir are durable at once (a journalling
  filesystem commits them in order, and the broker fsyncs what it renames);
- a file's data is durable only through an fsync or fdatasync of that file.

Pure: the caller passes a function that reads the backing file as it is now.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

ReadAt = Callable[[int, int], bytes]  # (offset, length) -> the bytes there now (fewer at the end of the file)


@dataclass
class PendingFile:
    path: str  # its name inside the filesystem, "/a/b"
    durable_size: int
    created: bool  # created since the last power loss, its name not yet durable
    undo: list[tuple[int, bytes]] = field(default_factory=list)  # (offset, bytes before the change), oldest first

    @property
    def undo_bytes(self) -> int:
        return sum(len(data) for _, data in self.undo)


@dataclass(frozen=True)
class Restore:
    """What a power loss does to one file: remove it, or put bytes back and cut it to `size`."""

    path: str
    remove: bool
    writes: tuple[tuple[int, bytes], ...] = ()  # applied in this order
    size: int = 0


class Journal:
    def __init__(self) -> None:
        self._files: dict[str, PendingFile] = {}  # by path

    # --- changes, before they land ------------------------------------------------

    def created(self, path: str) -> None:
        self._files[path] = PendingFile(path, durable_size=0, created=True)

    def before_write(self, path: str, size_now: int, offset: int, length: int, read_at: ReadAt) -> None:
        pending = self._pending(path, size_now)
        self._keep(pending, offset, offset + length, read_at)

    def before_truncate(self, path: str, size_now: int, new_size: int, read_at: ReadAt) -> None:
        pending = self._pending(path, size_now)
        self._keep(pending, new_size, max(size_now, new_size), read_at)

    def renamed(self, old: str, new: str) -> None:
        """`old` (a file or a directory) is now `new`; whatever was at `new` is gone."""
        self.removed(new)
        prefix = old.rstrip("/") + "/"
        for path in list(self._files):
            if path == old or path.startswith(prefix):
                pending = self._files.pop(path)
                pending.path = new + path[len(old):]
                self._files[pending.path] = pending

    def removed(self, path: str) -> None:
        prefix = path.rstrip("/") + "/"
        for name in [name for name in self._files if name == path or name.startswith(prefix)]:
            del self._files[name]

    # --- syncs -----------------------------------------------------------------------

    def file_synced(self, path: str) -> None:
        self._files.pop(path, None)

    def directory_synced(self, directory: str) -> None:
        directory = directory.rstrip("/") or "/"
        for pending in self._files.values():
            if posixpath.dirname(pending.path) == directory:
                pending.created = False

    # --- a power loss -------------------------------------------------------------------

    def power_loss(self) -> list[Restore]:
        """What to do to the backing files; the journal is empty afterwards."""
        restores = []
        for pending in self._files.values():
            if pending.created:
                restores.append(Restore(pending.path, remove=True))
            else:
                restores.append(Restore(pending.path, remove=False, writes=tuple(reversed(pending.undo)),
                                        size=pending.durable_size))
        self._files.clear()
        return restores

    def pending(self) -> list[PendingFile]:
        return list(self._files.values())

    # --- helpers --------------------------------------------------------------------------

    def _pending(self, path: str, size_now: int) -> PendingFile:
        pending = self._files.get(path)
        if pending is None:
            pending = PendingFile(path, durable_size=size_now, created=False)
            self._files[path] = pending
        return pending

    @staticmethod
    def _keep(pending: PendingFile, start: int, end: int, read_at: ReadAt) -> None:
        """Keep the bytes of [start, end) below the durable size as they are now."""
        end = min(end, pending.durable_size)
        if start < end:
            pending.undo.append((start, read_at(start, end - start)))
