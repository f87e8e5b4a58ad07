"""Long polls answer on a wake-up, re-read only what woke them, and give up at their deadline."""

from __future__ import annotations

import threading
import time

from replog.broker.replicas.long_poll import long_poll
from replog.common.clock import SystemClock


class Parked:
    """A partition stand-in: counts reads, wakes its waiters like HostedPartition.wake."""

    def __init__(self, available: int = 0) -> None:
        self.waiters: set = set()
        self.available = available
        self.reads = 0

    def add_waiter(self, waiter):
        self.waiters.add(waiter)

    def remove_waiter(self, waiter):
        self.waiters.discard(waiter)

    def wake(self):
        for waiter in list(self.waiters):
            waiter.notify(self)


def poll(partitions, *, max_wait_ms, min_bytes=1, error=False):
    def read_one(i, bytes_left):
        partitions[i].reads += 1
        return ("error" if error else "data", partitions[i].available)

    return long_poll(read_one, partitions, bytes_max=1 << 20, size=lambda a: a[1], urgent=lambda a: a[0] == "error",
                     min_bytes=min_bytes, max_wait_ms=max_wait_ms, clock=SystemClock())


def test_long_poll_answers_on_wake_up_not_on_timeout():
    parked = Parked()

    def append():
        parked.available = 10
        parked.wake()

    threading.Timer(0.1, append).start()
    started = time.monotonic()
    answers = poll([parked], max_wait_ms=5000)
    assert answers == [("data", 10)] and time.monotonic() - started < 4 and not parked.waiters  # not the 5 s


def test_long_poll_rereads_only_the_partitions_that_woke_it():
    quiet = [Parked() for _ in range(50)]
    busy = Parked()

    def append():
        busy.available = 7
        busy.wake()

    threading.Timer(0.05, append).start()
    answers = poll([*quiet, busy], max_wait_ms=5000)
    assert answers[-1] == ("data", 7)
    assert busy.reads == 2 and all(p.reads == 1 for p in quiet)


def test_long_poll_gives_up_at_its_deadline_and_answers_errors_at_once():
    parked = Parked()
    started = time.monotonic()
    poll([parked], max_wait_ms=100)
    assert 0.09 < time.monotonic() - started < 1
    started = time.monotonic()
    poll([parked], max_wait_ms=5000, error=True)
    assert time.monotonic() - started < 0.1 and not parked.waiters
