"""Long-polling reads (consumer Fetch, follower ReplicaFetch), woken by events.

`long_poll(read, partitions, ...)` reads once; if fewer than `min_bytes` are
available and the request may wait, it registers one `threading.Event` with
every partition read (`HostedPartition.add_waiter`), reads again (closing the
race with an append between the first read and the registration), and then
sleeps on the event until an append, HW move or role change sets it or the
deadline passes, re-reading after each wake-up. No timer loop, no polling.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable, TypeVar

from replog.broker.adapters.hosted_partition import HostedPartition
from replog.common.clock import Clock

T = TypeVar("T")


def long_poll(
    read: Callable[[], tuple[T, int, bool]],
    partitions: Iterable[HostedPartition],
    *,
    min_bytes: int,
    max_wait_ms: int,
    clock: Clock,
    stopping: Callable[[], bool] = lambda: False,
) -> T:
    """`read()` returns (answer, bytes available, answer-now flag, e.g. for an error)."""
    answer, available_bytes, answer_now = read()
    if answer_now or available_bytes >= min_bytes or max_wait_ms <= 0:
        return answer
    deadline_ms = clock.monotonic_ms() + max_wait_ms
    event = threading.Event()
    parked = list(partitions)
    for hosted in parked:
        hosted.add_waiter(event)
    try:
        while True:
            answer, available_bytes, answer_now = read()
            remaining_ms = deadline_ms - clock.monotonic_ms()
            if answer_now or available_bytes >= min_bytes or remaining_ms <= 0 or stopping():
                return answer
            event.wait(remaining_ms / 1000)
            event.clear()
    finally:
        for hosted in parked:
            hosted.remove_waiter(event)
