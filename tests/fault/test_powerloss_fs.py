"""The power-loss filesystem itself, mounted for real: what survives a power loss, and its failure modes.

Each test mounts it over a fresh backing directory, writes through the mount
as a program would (os.open / os.write / os.fsync), loses power and reads back.
"""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from tests.fault.powerloss.control import powerloss_mount

pytestmark = pytest.mark.fault


@pytest.fixture
def disk(tmp_path):
    with powerloss_mount(tmp_path / "backing", tmp_path / "mnt", tmp_path / "control.sock") as mounted:
        yield mounted


def write_file(path, data: bytes, *, fsync: bool, append: bool = False) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_fsynced_data_survives_and_the_unsynced_tail_is_dropped(disk):
    path = disk.mountpoint / "segment.log"
    write_file(path, b"durable-", fsync=True)
    write_file(path, b"lost", fsync=False, append=True)
    assert path.read_bytes() == b"durable-lost"  # written through: readers see it before the loss

    disk.power_loss()

    assert path.read_bytes() == b"durable-"


def test_an_overwrite_inside_synced_data_is_undone(disk):
    path = disk.mountpoint / "index"
    write_file(path, b"0123456789", fsync=True)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"xx", 2)
        os.pwrite(fd, b"yyyy", 1)
        os.ftruncate(fd, 4)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"0yyy"

    disk.power_loss()

    assert path.read_bytes() == b"0123456789"


def test_fdatasync_counts_as_a_sync(disk):
    path = disk.mountpoint / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"kept")
        os.fdatasync(fd)
        os.write(fd, b"gone")
    finally:
        os.close(fd)

    disk.power_loss()

    assert path.read_bytes() == b"kept"


def test_a_new_file_needs_its_own_or_its_directory_fsync(disk):
    (disk.mountpoint / "d").mkdir()
    (disk.mountpoint / "e").mkdir()
    never_synced = disk.mountpoint / "e" / "never"
    named_by_directory = disk.mountpoint / "d" / "named"
    write_file(never_synced, b"abc", fsync=False)
    write_file(named_by_directory, b"abc", fsync=False)
    fsync_directory(disk.mountpoint / "d")

    disk.power_loss()

    assert not never_synced.exists()
    assert named_by_directory.exists() and named_by_directory.read_bytes() == b""  # the name, not the data
    assert (disk.mountpoint / "d").is_dir()  # mkdir is durable at once


def test_a_checkpoint_written_by_temp_fsync_rename_survives(disk):
    target = disk.mountpoint / "checkpoint"
    write_file(target, b"old", fsync=True)
    temp = disk.mountpoint / "checkpoint.tmp"
    write_file(temp, b"new", fsync=True)
    os.replace(temp, target)

    disk.power_loss()

    assert target.read_bytes() == b"new"
    assert not temp.exists()


def test_writes_through_a_renamed_handle_are_tracked_under_the_new_name(disk):
    (disk.mountpoint / "p-0").mkdir()
    path = disk.mountpoint / "p-0" / "seg"
    write_file(path, b"synced", fsync=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.rename(disk.mountpoint / "p-0", disk.mountpoint / "p-0.x-delete")
        os.write(fd, b"+unsynced")
    finally:
        os.close(fd)

    disk.power_loss()

    assert (disk.mountpoint / "p-0.x-delete" / "seg").read_bytes() == b"synced"


def test_stats_count_unsynced_files(disk):
    write_file(disk.mountpoint / "a", b"1", fsync=False)
    write_file(disk.mountpoint / "b", b"2", fsync=True)
    stats = disk.stats()
    assert stats["files_unsynced"] == 1 and stats["files_created_unsynced"] == 1
    disk.power_loss()
    assert disk.stats()["files_unsynced"] == 0


def test_fsync_error_mode_fails_fsync_with_eio_and_keeps_the_data_unsynced(disk):
    path = disk.mountpoint / "f"
    write_file(path, b"base", fsync=True)
    disk.faults(fsync_error=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"more")
        with pytest.raises(OSError) as raised:
            os.fsync(fd)
        assert raised.value.errno == errno.EIO
    finally:
        os.close(fd)
    disk.faults()

    disk.power_loss()

    assert path.read_bytes() == b"base"


def test_write_error_mode_fails_writes_with_eio(disk):
    path = disk.mountpoint / "f"
    write_file(path, b"base", fsync=True)
    disk.faults(write_error=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        with pytest.raises(OSError) as raised:
            os.write(fd, b"more")
        assert raised.value.errno == errno.EIO
    finally:
        os.close(fd)
    disk.faults()
    assert path.read_bytes() == b"base"


def test_space_limit_refuses_growth_with_enospc_and_allows_overwrites(disk):
    path = disk.mountpoint / "f"
    write_file(path, b"x" * 1000, fsync=True)
    disk.faults(space_bytes_max=1500)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"y" * 1000, 0)  # no growth
        os.pwrite(fd, b"z" * 400, 1000)  # 1400 in all
        with pytest.raises(OSError) as raised:
            os.pwrite(fd, b"w" * 200, 1400)
        assert raised.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert path.stat().st_size == 1400


def test_fsync_stall_mode_delays_fsync_but_not_other_io(disk):
    path = disk.mountpoint / "f"
    write_file(path, b"base", fsync=True)
    disk.faults(fsync_stall_s=1.5)
    finished = threading.Event()

    def slow_fsync():
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"more")
            os.fsync(fd)
        finally:
            os.close(fd)
            finished.set()

    started = time.monotonic()
    worker = threading.Thread(target=slow_fsync)
    worker.start()
    write_file(disk.mountpoint / "other", b"meanwhile", fsync=False)  # not held up by the stalled fsync
    assert (disk.mountpoint / "other").read_bytes() == b"meanwhile"
    assert not finished.is_set()
    worker.join(timeout=30)
    assert finished.is_set() and time.monotonic() - started >= 1.5
    disk.faults()


def test_lifting_the_faults_ends_a_stalled_fsync_at_once(disk):
    """A test that heals the disk must not wait out the stall it set (its teardown would)."""
    path = disk.mountpoint / "g"
    write_file(path, b"base", fsync=True)
    disk.faults(fsync_stall_s=120.0)
    worker = threading.Thread(target=write_file, args=(path, b"more"), kwargs={"fsync": True})
    worker.start()
    assert not wait_until_joined(worker, 1.0), "the fsync returned although the disk stalls"
    disk.faults()
    assert wait_until_joined(worker, 10.0), "the stalled fsync did not return once the faults were lifted"


def test_a_held_rename_is_done_but_does_not_return_until_the_faults_are_lifted(disk):
    """The mode that holds a process in the middle of a swap: the rename has happened, and a process killed
    or losing power there leaves it so (renames are durable at once, journal.py). The kernel keeps the
    directory locked meanwhile: other lookups and name changes in it wait for the held rename."""
    write_file(disk.mountpoint / "a.log.cleaned", b"rewrite", fsync=True)
    fsync_directory(disk.mountpoint)
    disk.faults(rename_stall_suffix=".swap", rename_stall_s=120.0)
    worker = threading.Thread(target=os.rename, args=(disk.mountpoint / "a.log.cleaned", disk.mountpoint / "a.log.swap"))
    worker.start()
    deadline = time.monotonic() + 10
    while not disk.stats()["renames_held"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert disk.stats()["renames_held"] == ["/a.log.swap"]
    assert not wait_until_joined(worker, 0.5), "the rename to .swap returned although it is held"
    disk.power_loss()
    disk.faults()
    assert wait_until_joined(worker, 10.0), "the held rename did not return once the faults were lifted"
    assert sorted(p.name for p in disk.mountpoint.iterdir()) == ["a.log.swap"]
    assert (disk.mountpoint / "a.log.swap").read_bytes() == b"rewrite"
    assert disk.stats()["renames_held"] == [] and disk.stats()["renames_held_total"] == 1


def wait_until_joined(thread: threading.Thread, timeout_s: float) -> bool:
    thread.join(timeout=timeout_s)
    return not thread.is_alive()

def test_the_mount_is_gone_after_the_block_even_when_it_raised(tmp_path):
    mountpoint = tmp_path / "mnt"
    with pytest.raises(RuntimeError, match="boom"):
        with powerloss_mount(tmp_path / "backing", mountpoint, tmp_path / "control.sock") as disk:
            fd = os.open(mountpoint / "held-open", os.O_WRONLY | os.O_CREAT, 0o644)  # a busy mount
            try:
                raise RuntimeError("boom")
            finally:
                process = disk.process
                os.close(fd)
    assert not os.path.ismount(mountpoint)
    assert process.poll() is not None
