"""The reassignment throttle's token bucket, on a manual clock."""

from __future__ import annotations

from replog.broker.replication.replication_throttle import ReplicationThrottle
from replog.common.clock import ManualClock


def test_no_rate_means_no_throttle():
    throttle = ReplicationThrottle(ManualClock())
    assert throttle.allowance() is None
    throttle.record(10_000_000)
    assert throttle.allowance() is None


def test_a_second_of_burst_then_the_rate():
    clock = ManualClock()
    throttle = ReplicationThrottle(clock)
    throttle.set_rate(1000)
    assert throttle.allowance() == 1000
    throttle.record(1000)
    assert throttle.allowance() == 0
    clock.advance(250)
    assert throttle.allowance() == 250
    clock.advance(10_000)
    assert throttle.allowance() == 1000  # never more than one second's worth


def test_an_overdraft_is_paid_back_before_the_next_read():
    clock = ManualClock()
    throttle = ReplicationThrottle(clock)
    throttle.set_rate(1000)
    throttle.record(3000)  # one batch larger than the bucket
    clock.advance(1500)
    assert throttle.allowance() == 0
    clock.advance(600)
    assert throttle.allowance() == 100


def test_lifting_and_changing_the_rate():
    clock = ManualClock()
    throttle = ReplicationThrottle(clock)
    throttle.set_rate(1000)
    throttle.record(5000)
    throttle.set_rate(0)
    assert throttle.allowance() is None
    throttle.set_rate(50)
    assert throttle.allowance() == 50
