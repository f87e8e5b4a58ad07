"""A FUSE passthrough filesystem that can lose power: unsynced writes are dropped on command.

Run as its own process (never inside the test process: a broker's I/O on the
mount would then wait on the interpreter that serves it):

    python -m tests.fault.powerloss.fs BACKING MOUNTPOINT CONTROL_SOCKET

Every operation goes straight through to BACKING; journal.py keeps what a
power loss would undo (its docstring says which operations are durable when).
Commands come as one JSON object per line on the Unix socket CONTROL_SOCKET and
are answered the same way (control.py is the client):

- {"op": "ping"}
- {"op": "power_loss"}: every file goes back to its last fsynced state
- {"op": "faults", "fsync_error": bool, "write_error": bool, "fsync_stall_s": float,
  "space_bytes_max": int | null, "rename_stall_suffix": str, "rename_stall_s": float}: fsync or
  write fail with EIO, fsync waits first (until the stall's time is up or the next "faults" command,
  whichever comes first), writes that would grow the files past the limit fail with ENOSPC; a rename
  to a name ending in the suffix is done, then waits the same way before it returns (a process is
  held in the middle of what it does after that rename, to be killed or lose power there)
- {"op": "stats"}: files with unsynced changes, bytes in use, fsync count, the renames held now
  (their new paths) and how many were held in all

The mount uses zero attribute and entry timeouts, so the kernel asks again
after a power loss instead of trusting sizes it cached.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socketserver
import sys
import threading
from dataclasses import dataclass

import mfusepy as fuse

from tests.fault.powerloss.journal import Journal

log = logging.getLogger("powerloss")


@dataclass
class Faults:
    fsync_error: bool = False
    write_error: bool = False
    fsync_stall_s: float = 0.0
    space_bytes_max: int | None = None
    rename_stall_suffix: str = ""
    rename_stall_s: float = 0.0


class PowerLossFs(fuse.Operations):
    use_ns = True

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self.journal = Journal()
        self.faults = Faults()
        self.stall_over = threading.Event()  # set, and replaced, by every "faults" command: stalls end early
        self.lock = threading.Lock()  # journal, faults, the used-bytes count and every change to BACKING
        self.handles: dict[int, str] = {}  # backing fd -> its path in the filesystem (kept across renames)
        self.fsyncs = 0
        self.renames_held: list[str] = []  # new paths of the renames waiting now
        self.renames_held_total = 0
        self.used_bytes = self._measure()

    # --- helpers ------------------------------------------------------------------------

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def _measure(self) -> int:
        total = 0
        for directory, _, names in os.walk(self.backing):
            for name in names:
                total += os.lstat(os.path.join(directory, name)).st_size
        return total

    @staticmethod
    def _reader(fd: int):
        return lambda offset, length: os.pread(fd, length, offset)

    def _check_space(self, growth: int) -> None:
        limit = self.faults.space_bytes_max
        if limit is not None and growth > 0 and self.used_bytes + growth > limit:
            raise fuse.FuseOSError(errno.ENOSPC)

    # --- attributes and directories -------------------------------------------------------

    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self._real(path))
        names = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns", "st_mtime_ns", "st_ctime_ns",
                 "st_ino", "st_blocks")
        values = {name: getattr(st, name) for name in names}
        for name in ("st_atime", "st_mtime", "st_ctime"):
            values[name] = values.pop(name + "_ns")
        return values

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._real(path))

    def access(self, path, amode):
        if not os.access(self._real(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def statfs(self, path):
        st = os.statvfs(self._real(path))
        return {name: getattr(st, name) for name in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                      "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def chmod(self, path, mode):
        os.chmod(self._real(path), mode)
        return 0

    def utimens(self, path, times=None):
        os.utime(self._real(path), ns=times)
        return 0

    def mkdir(self, path, mode):
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path):
        with self.lock:
            os.rmdir(self._real(path))
            self.journal.removed(path)
        return 0

    def unlink(self, path):
        with self.lock:
            real = self._real(path)
            size = os.lstat(real).st_size
            os.unlink(real)
            self.used_bytes -= size
            self.journal.removed(path)
        return 0

    def rename(self, old, new):
        with self.lock:
            real_new = self._real(new)
            replaced = os.lstat(real_new).st_size if os.path.isfile(real_new) else 0
            os.rename(self._real(old), real_new)
            self.used_bytes -= replaced
            self.journal.renamed(old, new)
            prefix = old.rstrip("/") + "/"
            for fd, name in list(self.handles.items()):
                if name == old or name.startswith(prefix):
                    self.handles[fd] = new + name[len(old):]
            suffix, stall_s, stall_over = self.faults.rename_stall_suffix, self.faults.rename_stall_s, self.stall_over
            held = bool(suffix) and stall_s > 0 and new.endswith(suffix)
            if held:
                self.renames_held.append(new)
                self.renames_held_total += 1
        if held:
            stall_over.wait(stall_s)  # done, not answered yet; the lock is not held
            with self.lock:
                self.renames_held.remove(new)
        return 0

    def fsyncdir(self, path, datasync, fh):
        with self.lock:
            self.journal.directory_synced(path)
        return 0

    # --- files ----------------------------------------------------------------------------

    def open(self, path, flags):
        with self.lock:
            real = self._real(path)
            if flags & os.O_TRUNC:
                self._truncate_locked(path, real, 0)
            # Read-write whatever the caller asked (the kernel enforces its mode): a write must read
            # the bytes it replaces for the journal.
            dropped = os.O_ACCMODE | os.O_APPEND | os.O_TRUNC | os.O_CREAT | os.O_EXCL
            fd = os.open(real, (flags & ~dropped) | os.O_RDWR)
            self.handles[fd] = path
            return fd

    def create(self, path, mode, fi=None):
        with self.lock:
            real = self._real(path)
            existed = os.path.exists(real)
            if existed:
                self._truncate_locked(path, real, 0)
            fd = os.open(real, os.O_RDWR | os.O_CREAT, mode)
            if not existed:
                self.journal.created(path)
            self.handles[fd] = path
            return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        with self.lock:
            if self.faults.write_error:
                raise fuse.FuseOSError(errno.EIO)
            name = self.handles[fh]
            size_now = os.fstat(fh).st_size
            growth = max(0, offset + len(data) - size_now)
            self._check_space(growth)
            self.journal.before_write(name, size_now, offset, len(data), self._reader(fh))
            written = os.pwrite(fh, data, offset)
            self.used_bytes += max(0, offset + written - size_now)
            return written

    def truncate(self, path, length, fh=None):
        with self.lock:
            self._truncate_locked(path, self._real(path), length)
        return 0

    def _truncate_locked(self, path: str, real: str, length: int) -> None:
        size_now = os.lstat(real).st_size
        self._check_space(length - size_now)
        fd = os.open(real, os.O_RDWR)
        try:
            self.journal.before_truncate(path, size_now, length, self._reader(fd))
            os.ftruncate(fd, length)
        finally:
            os.close(fd)
        self.used_bytes += length - size_now

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        with self.lock:
            self.handles.pop(fh, None)
        os.close(fh)
        return 0

    def fsync(self, path, datasync, fh):
        with self.lock:
            stall_s, fail, stall_over = self.faults.fsync_stall_s, self.faults.fsync_error, self.stall_over
        if stall_s > 0:
            stall_over.wait(stall_s)  # the stall this mode is for; the lock is not held
        with self.lock:
            if fail:
                raise fuse.FuseOSError(errno.EIO)
            self.journal.file_synced(self.handles.get(fh, path))
            self.fsyncs += 1
        return 0

    # --- commands --------------------------------------------------------------------------

    def power_loss(self) -> dict:
        with self.lock:
            restores = self.journal.power_loss()
            removed = rewound = 0
            for restore in restores:
                real = self._real(restore.path)
                if not os.path.exists(real):
                    continue
                if restore.remove:
                    os.unlink(real)
                    removed += 1
                    continue
                with open(real, "r+b") as file:
                    for offset, data in restore.writes:
                        file.seek(offset)
                        file.write(data)
                    file.truncate(restore.size)
                rewound += 1
            self.used_bytes = self._measure()
        log.info("power loss: %d files rewound, %d removed", rewound, removed)
        return {"files_rewound": rewound, "files_removed": removed}

    def set_faults(self, request: dict) -> dict:
        with self.lock:
            self.faults = Faults(
                fsync_error=bool(request.get("fsync_error", False)),
                write_error=bool(request.get("write_error", False)),
                fsync_stall_s=float(request.get("fsync_stall_s", 0.0)),
                space_bytes_max=request.get("space_bytes_max"),
                rename_stall_suffix=str(request.get("rename_stall_suffix", "")),
                rename_stall_s=float(request.get("rename_stall_s", 0.0)),
            )
            self.stall_over.set()  # fsyncs and renames held under the old faults return now
            self.stall_over = threading.Event()
            return {"faults": vars(self.faults)}

    def stats(self) -> dict:
        with self.lock:
            pending = self.journal.pending()
            return {
                "files_unsynced": len(pending),
                "files_created_unsynced": sum(1 for item in pending if item.created),
                "used_bytes": self.used_bytes,
                "fsyncs": self.fsyncs,
                "renames_held": list(self.renames_held),
                "renames_held_total": self.renames_held_total,
            }

    def command(self, request: dict) -> dict:
        op = request.get("op")
        if op == "ping":
            return {"ok": True}
        if op == "power_loss":
            return {"ok": True, **self.power_loss()}
        if op == "faults":
            return {"ok": True, **self.set_faults(request)}
        if op == "stats":
            return {"ok": True, **self.stats()}
        return {"ok": False, "error": f"unknown op {op!r}; known: ping, power_loss, faults, stats"}


def serve_commands(filesystem: PowerLossFs, socket_path: str) -> socketserver.UnixStreamServer:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for line in self.rfile:
                try:
                    answer = filesystem.command(json.loads(line))
                except (ValueError, TypeError, OSError) as exc:
                    answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                self.wfile.write(json.dumps(answer).encode() + b"\n")
                self.wfile.flush()

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    if os.path.exists(socket_path):
        os.unlink(socket_path)
    server = Server(socket_path, Handler)
    threading.Thread(target=server.serve_forever, name="powerloss-control", daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m tests.fault.powerloss.fs BACKING MOUNTPOINT CONTROL_SOCKET", file=sys.stderr)
        return 2
    backing, mountpoint, socket_path = argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    filesystem = PowerLossFs(backing)
    serve_commands(filesystem, socket_path)
    # Zero timeouts: after a power loss the kernel must not answer from sizes or names it cached.
    fuse.FUSE(filesystem, mountpoint, foreground=True, attr_timeout=0, entry_timeout=0, negative_timeout=0,
              fsname="powerloss")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
