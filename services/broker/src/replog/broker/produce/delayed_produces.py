"""acks=-1 produce requests waiting for the HW: the core's purgatory behind one lock.

Theory of operation (docs/architecture.md, "An acks=all produce"; core/produce/purgatory.py, core/produce/produce.py):

The gRPC handler thread of a unary acks=-1 request parks one `DelayedProduce`
here and blocks on its own `threading.Event` (`wait`); a ProduceStream parks
one per request with a callback (`park`) and reads on while it waits. Nothing
polls:
- `check(tp)` runs whenever the partition's HW advanced or its role or ISR
  changed (after the partition lock was released); ops that complete get their
  event set (their thread answers) or their callback called.
- a thread whose wait reaches its deadline, or a stream past the deadline of
  one of its ops, calls `expire_due()`, which times out every op due, so each
  op completes or expires exactly once.

Lock order: this lock, then a partition lock (the op reads the replica's
progress through `progress_of`). Nobody holding a partition lock calls in here.
On shutdown every waiting op expires at once, so no handler thread outlives
the server by its timeout.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from replog.broker.core.produce.produce import DelayedProduce, ProduceProgress, ProduceResult, ProduceWait
from replog.broker.core.produce.purgatory import AddOutcome, Purgatory
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

_FAR_FUTURE_MS = 2**62


class _ParkedProduce(DelayedProduce):
    def __init__(self, waits: Sequence[ProduceWait], progress_of: Callable[[TopicPartition], ProduceProgress],
                 on_done: Callable[[tuple[ProduceResult, ...]], None] | None = None) -> None:
        super().__init__(waits, progress_of)
        self.done = threading.Event()
        self._on_done = on_done

    def finish(self) -> None:
        """Completed or expired (exactly once, outside the purgatory's lock): tell whoever waits."""
        self.done.set()
        if self._on_done is not None:
            self._on_done(self.results)


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
        deadline_ms, _ = self._add(op, timeout_ms)
        while not op.is_done:
            remaining_ms = deadline_ms - self._clock.monotonic_ms()
            if remaining_ms > 0 and op.done.wait(remaining_ms / 1000):
                break
            if remaining_ms <= 0:
                self.expire_due()
        return op.results

    def park(self, waits: Sequence[ProduceWait], timeout_ms: int,
             on_done: Callable[[tuple[ProduceResult, ...]], None]) -> int:
        """Park without blocking: `on_done(results)` is called once, from the thread that completes or
        expires the op (possibly this one, before `park` returns). Returns the op's deadline (monotonic
        ms): the caller must call `expire_due()` once it has passed, as no thread watches the clock."""
        op = _ParkedProduce(waits, self._progress_of, on_done)
        deadline_ms, parked = self._add(op, timeout_ms)
        if not parked:  # done already; once parked, only check() or an expiry finishes it
            op.finish()
        return deadline_ms

    def _add(self, op: _ParkedProduce, timeout_ms: int) -> tuple[int, bool]:
        """The op's deadline, and whether it is parked (else it is done: completed or refused)."""
        deadline_ms = self._clock.monotonic_ms() + timeout_ms
        with self._lock:
            outcome = AddOutcome.PURGATORY_FULL if self._closed else self._purgatory.add(op, op.keys, deadline_ms)
            if outcome is AddOutcome.PURGATORY_FULL:
                op.on_expire()
        return deadline_ms, outcome is AddOutcome.WATCHING

    def check(self, topic_partition: TopicPartition) -> None:
        """The partition's HW, role or ISR changed: complete the ops it lets complete."""
        with self._lock:
            completed = self._purgatory.check(topic_partition)
        for op in completed:
            op.finish()

    def expire_due(self) -> None:
        """Time out every op whose deadline has passed."""
        with self._lock:
            expired = self._purgatory.expire(self._clock.monotonic_ms())
        for op in expired:
            op.finish()

    def close(self) -> None:
        """Time out every waiting op now and refuse new ones (broker shutdown)."""
        with self._lock:
            self._closed = True
            expired = self._purgatory.expire(_FAR_FUTURE_MS)
        for op in expired:
            op.finish()
