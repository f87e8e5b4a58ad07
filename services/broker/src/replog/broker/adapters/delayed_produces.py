"""acks=-1 produce requests waiting for the HW: the core's purgatory behind one lock.

Theory of operation (DESIGN.md §4 "Purgatory"; core/purgatory.py, core/produce.py):

The gRPC handler thread of an acks=-1 request parks one `DelayedProduce` here
and blocks on its own `threading.Event`. Nothing polls:
- `check(tp)` runs whenever the partition's HW advanced or its role or ISR
  changed (after the partition lock was released); ops that complete get their
  event set and their thread answers.
- a thread whose wait reaches its deadline calls `expire(now)`, which times out
  every op due (its own included), so each op completes or expires exactly once.

Lock order: this lock, then a partition lock (the op reads the replica's
progress through `progress_of`). Nobody holding a partition lock calls in here.
On shutdown every waiting op expires at once, so no handler thread outlives
the server by its timeout.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from replog.broker.core.produce import DelayedProduce, ProduceProgress, ProduceResult, ProduceWait
from replog.broker.core.purgatory import AddOutcome, Purgatory
from replog.broker.core.topic_partition import TopicPartition
from replog.common.clock import Clock

_FAR_FUTURE_MS = 2**62


class _ParkedProduce(DelayedProduce):
    def __init__(self, waits: Sequence[ProduceWait], progress_of: Callable[[TopicPartition], ProduceProgress]) -> None:
        super().__init__(waits, progress_of)
        self.done = threading.Event()


class DelayedProduces:
    def __init__(
        self, progress_of: Callable[[TopicPartition], ProduceProgress], clock: Clock, *, operations_max: int = 100_000
    ) -> None:
        self._progress_of = progress_of
        self._clock = clock
        self._lock = threading.Lock()
        self._purgatory: Purgatory[_ParkedProduce, TopicPartition] = Purgatory(operations_max=operations_max)
        self._closed = False

    def __len__(self) -> int:
        return len(self._purgatory)

    def wait(self, waits: Sequence[ProduceWait], timeout_ms: int) -> tuple[ProduceResult, ...]:
        """Block until every wait resolved or `timeout_ms` passed; the results in `waits` order."""
        op = _ParkedProduce(waits, self._progress_of)
        deadline_ms = self._clock.monotonic_ms() + timeout_ms
        with self._lock:
            outcome = AddOutcome.PURGATORY_FULL if self._closed else self._purgatory.add(op, op.keys, deadline_ms)
            if outcome is AddOutcome.PURGATORY_FULL:
                op.on_expire()
        while not op.is_done:
            remaining_ms = deadline_ms - self._clock.monotonic_ms()
            if remaining_ms > 0 and op.done.wait(remaining_ms / 1000):
                break
            if remaining_ms <= 0:
                self._expire()
        return op.results

    def check(self, topic_partition: TopicPartition) -> None:
        """The partition's HW, role or ISR changed: complete the ops it lets complete."""
        with self._lock:
            completed = self._purgatory.check(topic_partition)
        for op in completed:
            op.done.set()

    def _expire(self) -> None:
        with self._lock:
            expired = self._purgatory.expire(self._clock.monotonic_ms())
        for op in expired:
            op.done.set()

    def close(self) -> None:
        """Time out every waiting op now and refuse new ones (broker shutdown)."""
        with self._lock:
            self._closed = True
            expired = self._purgatory.expire(_FAR_FUTURE_MS)
        for op in expired:
            op.done.set()
