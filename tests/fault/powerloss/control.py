"""Mount the power-loss filesystem (fs.py) in a process of its own, command it, always unmount it.

    with powerloss_mount(backing, mountpoint, socket_path) as disk:
        ...                       # processes write under `mountpoint`
        disk.power_loss()         # what was not fsynced is gone
        disk.faults(fsync_error=True)

Leaving the block unmounts (lazily if something still holds the mount) and
reaps the process, also when the block raised.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MOUNT_DEADLINE_S = 30.0
EXIT_DEADLINE_S = 10.0


class PowerLossDisk:
    def __init__(self, mountpoint: Path, socket_path: Path, process: subprocess.Popen, log_path: Path) -> None:
        self.mountpoint = mountpoint
        self.socket_path = socket_path
        self.process = process
        self.log_path = log_path

    def command(self, op: str, **fields) -> dict:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(30)
            connection.connect(str(self.socket_path))
            connection.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = connection.recv(65536)
                if not chunk:
                    break
                reply += chunk
        answer = json.loads(reply)
        if not answer.get("ok"):
            raise RuntimeError(f"power-loss filesystem refused {op}: {answer.get('error')}")
        return answer

    def power_loss(self) -> dict:
        """Drop every change not fsynced; stop the processes writing here first."""
        return self.command("power_loss")

    def faults(self, *, fsync_error: bool = False, write_error: bool = False, fsync_stall_s: float = 0.0,
               space_bytes_max: int | None = None, rename_stall_suffix: str = "", rename_stall_s: float = 0.0) -> dict:
        """Set the failure modes (each call replaces all of them, and ends every stall of the old ones; no
        arguments clears them). A rename to a name ending in `rename_stall_suffix` is held after it is done."""
        return self.command("faults", fsync_error=fsync_error, write_error=write_error, fsync_stall_s=fsync_stall_s,
                            space_bytes_max=space_bytes_max, rename_stall_suffix=rename_stall_suffix,
                            rename_stall_s=rename_stall_s)

    def stats(self) -> dict:
        return self.command("stats")


def _mounted(mountpoint: Path) -> bool:
    return os.path.ismount(mountpoint)


def _unmount(mountpoint: Path) -> None:
    if not _mounted(mountpoint):
        return
    done = subprocess.run(["fusermount3", "-u", str(mountpoint)], capture_output=True, check=False)
    if done.returncode != 0 and _mounted(mountpoint):  # busy: detach now, release when the last user goes
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True, check=False)


@contextlib.contextmanager
def powerloss_mount(backing: Path, mountpoint: Path, socket_path: Path | None = None) -> Iterator[PowerLossDisk]:
    """`socket_path` None: one in a short temporary directory (a Unix socket's path is limited to 107 bytes)."""
    socket_dir = None
    if socket_path is None:
        socket_dir = Path(tempfile.mkdtemp(prefix="powerloss-"))
        socket_path = socket_dir / "control.sock"
    backing.mkdir(parents=True, exist_ok=True)
    mountpoint.mkdir(parents=True, exist_ok=True)
    log_path = mountpoint.with_name(mountpoint.name + ".fs.log")
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.fault.powerloss.fs", str(backing), str(mountpoint), str(socket_path)],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
        )
    disk = PowerLossDisk(mountpoint, socket_path, process, log_path)
    try:
        deadline = time.monotonic() + MOUNT_DEADLINE_S
        while not (_mounted(mountpoint) and socket_path.exists()):
            if process.poll() is not None:
                raise RuntimeError(f"the power-loss filesystem exited with {process.returncode}: "
                                   f"{log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the power-loss filesystem did not mount within {MOUNT_DEADLINE_S} s")
            time.sleep(0.05)
        disk.command("ping")
        yield disk
    finally:
        _unmount(mountpoint)
        try:
            process.wait(timeout=EXIT_DEADLINE_S)  # libfuse returns from its loop once unmounted
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=EXIT_DEADLINE_S)
        _unmount(mountpoint)
        if socket_dir is not None:
            shutil.rmtree(socket_dir, ignore_errors=True)
