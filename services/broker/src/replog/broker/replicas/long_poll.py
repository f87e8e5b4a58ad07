"""Long-polling reads (consumer Fetch, follower ReplicaFetch), woken by events.

`long_poll(read_one, partitions, ...)` parks one `Waiter` on every partition
of the request (`HostedPartition.add_waiter`), then reads each partition once
(`read_one(index, bytes_left)`). If fewer than `min_bytes` are available, no
answer is urgent (an error, a diverging epoch) and the request may wait, it
sleeps on the waiter until an append, HW move or role change on one of its
partitions wakes it or the deadline passes. After a wake-up only the
partitions that signalled are read again: a follower's request carries every
partition it follows on this leader (thousands after a failover), and one
append must not cost a re-read of all of them. Parking before the first read
closes the race with an append in between. No timer loop, no polling.
"""

from __future__ import annotations

import threading
from typing import Callable, Protocol, Sequence, TypeVar

from replog.common.clock import Clock

A = TypeVar("A")


class Waiter:
    """One long poll's wake-up call: which partitions signalled since it last looked."""

    __slots__ = ("replica_id", "_lock", "_event", "_woken")

    def __init__(self, replica_id: int | None = None) -> None:
        self.replica_id = replica_id  # the follower whose fetch session waits; None for a consumer
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._woken: set[int] = set()

    def notify(self, source: object) -> None:
        """Called by a partition (under its own lock): something about it changed."""
        with self._lock:
            self._woken.add(id(source))
        self._event.set()

    def note(self, source: object) -> None:
        """Called by a partition (under its own lock): it changed in a way that is no reason to
        answer early (a HW that moved, for a follower's fetch session). Recorded without waking
        the poll: it reads the partition again with its next wake-up, or before it answers."""
        with self._lock:
            self._woken.add(id(source))

    def wait(self, timeout_s: float) -> bool:
        """Sleep until notified (True) or for `timeout_s` (False)."""
        return self._event.wait(timeout_s)

    def take(self) -> set[int]:
        """The ids of the partitions that signalled since the last take; resets the wake-up."""
        with self._lock:
            woken, self._woken = self._woken, set()
            self._event.clear()
        return woken


class Waitable(Protocol):
    def add_waiter(self, waiter: Waiter) -> None: ...

    def remove_waiter(self, waiter: Waiter) -> None: ...


def long_poll(
    read_one: Callable[[int, int], A],
    partitions: Sequence[Waitable | None],
    *,
    bytes_max: int,
    size: Callable[[A], int],
    urgent: Callable[[A], bool],
    min_bytes: int,
    max_wait_ms: int,
    clock: Clock,
    stopping: Callable[[], bool] = lambda: False,
) -> list[A]:
    """One answer per entry of `partitions` (None: not hosted; `read_one` answers it at once).

    `read_one(index, bytes_left)` reads partition `index` with what is left of
    the request's byte budget (at least 1, so every partition can make progress).
    """
    answers: list[A | None] = [None] * len(partitions)
    sent = 0

    def read(indices) -> bool:
        nonlocal sent
        for i in indices:
            if answers[i] is not None:
                sent -= size(answers[i])
        now = False
        for i in indices:
            answer = answers[i] = read_one(i, max(bytes_max - sent, 1))
            sent += size(answer)
            now = now or urgent(answer)
        return now

    if max_wait_ms <= 0:
        read(range(len(partitions)))
        return answers  # type: ignore[return-value]
    deadline_ms = clock.monotonic_ms() + max_wait_ms
    waiter = Waiter()
    positions: dict[int, list[int]] = {}
    parked: dict[int, Waitable] = {}
    for i, hosted in enumerate(partitions):
        if hosted is not None:
            positions.setdefault(id(hosted), []).append(i)
            parked[id(hosted)] = hosted
    for hosted in parked.values():
        hosted.add_waiter(waiter)
    try:
        answer_now = read(range(len(partitions)))
        while True:
            remaining_ms = deadline_ms - clock.monotonic_ms()
            if answer_now or sent >= min_bytes or remaining_ms <= 0 or stopping():
                return answers  # type: ignore[return-value]
            waiter.wait(remaining_ms / 1000)
            woken = waiter.take()
            if woken:
                answer_now = read(sorted(i for source in woken for i in positions.get(source, ())))
    finally:
        for hosted in parked.values():
            hosted.remove_waiter(waiter)
