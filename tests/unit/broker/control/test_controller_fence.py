"""The controller fence adapter: ZooKeeper is read once per new epoch, never for the current one."""

import pytest

from replog.broker.control.controller_fence import ControllerFence, EpochUnconfirmed
from replog.broker.core.errors import ErrorCode


class ZooKeeper:
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.reads = 0
        self.down = False

    def read(self) -> int:
        self.reads += 1
        if self.down:
            raise EpochUnconfirmed("ZooKeeper is down")
        return self.epoch


def test_the_real_controller_is_confirmed_once_then_obeyed_without_reads():
    zk = ZooKeeper(3)
    fence = ControllerFence(zk.read)
    assert [fence.admit(3) for _ in range(100)] == [None] * 100
    assert zk.reads == 1 and fence.epoch == 3


def test_a_jump_is_refused_every_time_and_the_real_controller_still_obeyed():
    zk = ZooKeeper(3)
    fence = ControllerFence(zk.read)
    assert fence.admit(3) is None
    for _ in range(3):
        refused = fence.admit(2147483647)
        assert refused.code is ErrorCode.STALE_CONTROLLER_EPOCH
    assert fence.epoch == 3 and fence.admit(3) is None
    zk.epoch = 4  # a new controller wins the seat
    assert fence.admit(4) is None and fence.admit(3).code is ErrorCode.STALE_CONTROLLER_EPOCH


def test_zookeeper_unreachable_leaves_the_fence_and_raises():
    zk = ZooKeeper(3)
    fence = ControllerFence(zk.read)
    assert fence.admit(3) is None
    zk.down = True
    with pytest.raises(EpochUnconfirmed):
        fence.admit(4)
    assert fence.epoch == 3 and fence.admit(3) is None
