"""The free-space reserve: a leader refuses produce while the log directory is below it, with a message
that names the reserve, and takes produce again once space is back."""

from __future__ import annotations

import os

from replog.broker.core.errors import ErrorCode
from replog.broker.logdirs.log_dir_space import LogDirSpace
from replog.common.clock import ManualClock
from tests.unit.broker.replicas.test_replication_steps import decide, hosted, produce

RESERVE_BYTES = 1000


class Disk:
    def __init__(self, free_bytes: int) -> None:
        self.free_bytes = free_bytes

    def statvfs(self, _path) -> os.statvfs_result:
        # f_bsize, f_frsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, f_favail, f_flag, f_namemax
        return os.statvfs_result((1, 1, 10**9, self.free_bytes, self.free_bytes, 0, 0, 0, 0, 255))


def test_a_leader_refuses_produce_below_the_reserve_and_takes_it_again_above(tmp_path):
    disk = Disk(free_bytes=10 * RESERVE_BYTES)
    leader = hosted(tmp_path, 1, ManualClock())
    leader.dir_space = LogDirSpace(tmp_path, free_bytes_min=RESERVE_BYTES, statvfs=disk.statvfs)
    decide(leader, 1, 0, isr=(1,))
    leader.dir_space.refresh()
    assert produce(leader, [b"a"]).error_code is ErrorCode.NONE

    disk.free_bytes = RESERVE_BYTES - 1
    leader.dir_space.refresh()
    refused = produce(leader, [b"b"])
    assert refused.error_code is ErrorCode.STORAGE_ERROR
    assert "log_dir_free_bytes_min" in refused.message and str(RESERVE_BYTES - 1) in refused.message
    assert leader.log.log_end_offset == 1  # nothing written

    disk.free_bytes = RESERVE_BYTES
    leader.dir_space.refresh()
    assert produce(leader, [b"c"]).error_code is ErrorCode.NONE


def test_no_reserve_measures_nothing(tmp_path):
    def statvfs(_path):
        raise AssertionError("measured with no reserve")

    space = LogDirSpace(tmp_path, free_bytes_min=0, statvfs=statvfs)
    space.refresh()
    assert space.shortage() is None
