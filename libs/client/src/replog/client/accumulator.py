"""The producer's record accumulator: open batches, the batches ready to leave, and which may leave now.

`send()` and `send_batch()` add records to their partition's open batch (`append`,
`add_many`); the records' bytes are written as they join (replog.common.records.BatchBuilder),
so the sender only adds the header and CRC when the batch may leave. A batch is ready when
full, after `linger_ms`, or on `flush`; the sender takes what may leave now with `drain`.

The rules `drain` keeps, per partition: at most `max_in_flight` requests out (Kafka's
max.in.flight.requests.per.connection; at most 5 with idempotence, the batches a broker
remembers per producer), so a batch need not wait for the whole round trip of the one
before it; batches leave in the partition's order; a lingered batch leaves only when its
partition can send. A partition with a batch to retry *recovers*: nothing new leaves until
every batch of it in flight has answered, and the batches to retry go one at a time, in
sequence order (`retry`); once none is in flight and none waits to be retried, the
partition sends as before, its open batch included.

`drain` costs what changed since its last pass, not the partition count: it looks at the open
batches of the partitions in `movable` only -- a partition enters it when it opens a batch, when a
request of it is answered, when its recovery ends and when one of its batches leaves, and leaves it
when its open batch left or cannot leave yet (a request in flight at the limit, a recovery, ready
batches ahead of it), until one of those events puts it back. At 10,000 partitions a pass over all
of them on every answer made the sender the producer's bottleneck.

Every field is guarded by `lock`, a Condition over `mutex` (the plain lock the per-record path
takes directly): senders of records wait on it for buffer space, and `wait_until_delivered` for
the buffered count to reach zero.
"""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable

from replog.client.results import BatchOutcome, SendHandle
from replog.common import records as rec


@dataclass
class ProducerBatch:
    topic: str
    partition: int
    records: rec.BatchBuilder = field(default_factory=rec.BatchBuilder)  # encoded as they join; .count
    futures: list = field(default_factory=list)       # send_batch's (future, index of its first record)
    outcome: BatchOutcome = field(init=False)  # what send's handles read (results.py)
    size_bytes: int = 0
    created_s: float = field(default_factory=time.monotonic)
    encoded: bytes | None = None
    base_sequence: int = -1
    ordinal: int = -1  # the partition's batches in send order, from 0 (set with the sequence)
    attempts: int = 0
    deadline_s: float = 0.0
    retry_at_s: float = 0.0
    sent_to: tuple[str, int] | None = None  # (address, leader epoch) of the leader last sent to
    failures_here: int = 0  # retriable failures at sent_to in a row: what the backoff grows with

    def __post_init__(self) -> None:
        self.outcome = BatchOutcome(self.topic, self.partition)


class Accumulator:
    def __init__(self, *, max_in_flight: int, linger_s: float, batch_records_max: int, batch_bytes_max: int,
                 buffered_records_max: int, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock`: monotonic seconds, what lingers and retry backoffs are measured on (a simulation
        passes its own)."""
        self.clock = clock
        self.max_in_flight = max_in_flight
        self.linger_s = linger_s
        self.batch_records_max = batch_records_max
        self.batch_bytes_max = batch_bytes_max
        self.mutex = threading.Lock()  # `with self.mutex` is C-level; `lock` waits on the same lock
        self.lock = threading.Condition(self.mutex)
        self.open: dict[tuple[str, int], ProducerBatch] = {}
        self.ready: collections.deque[ProducerBatch] = collections.deque()
        self.in_flight: dict[tuple[str, int], int] = {}  # batches in flight per partition
        self.recovering: set[tuple[str, int]] = set()  # partitions retrying: one batch at a time, in order
        # partitions whose open batch `drain` looks at (an ordered set; the module docstring says when)
        self.movable: dict[tuple[str, int], None] = {}
        self.ready_keys: set[tuple[str, int]] = set()  # partitions with a batch in `ready` (a superset)
        self.unfinished: dict[tuple[str, int], set[int]] = {}  # ordinals encoded and not yet answered for good
        self.buffered = 0
        self.buffered_max = buffered_records_max
        self.closed = False

    # --- records in (the callers' threads) ------------------------------------------------------

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes | None, timestamp_ms: int,
               headers: rec.Headers | None, size: int, only_if_open: bool = False) -> tuple[SendHandle | None, bool]:
        """Write one record into its partition's open batch: its handle (None, writing nothing, when
        `only_if_open` and the partition has no open batch) and whether the sender must be woken.
        The per-record path: one uncontended lock, the record's bytes appended, one small handle."""
        with self.mutex:
            if self.closed:
                raise RuntimeError("the producer is closed")
            while self.buffered >= self.buffered_max:
                self.lock.wait()
            batch = self.open.get((topic, partition))
            if batch is None:
                if only_if_open:
                    return None, False
                wake = self.in_flight.get((topic, partition), 0) < self.max_in_flight
                batch = self.open[(topic, partition)] = ProducerBatch(topic, partition, created_s=self.clock())
                self.movable[(topic, partition)] = None
            else:
                wake = False
            builder = batch.records
            handle = SendHandle(batch.outcome, builder.count)
            if headers:
                builder.add_many_with_headers(((key, value, timestamp_ms, headers),))
            else:
                builder.add(key, value, timestamp_ms)
            batch.size_bytes += size
            self.buffered += 1
            if builder.count >= self.batch_records_max or batch.size_bytes >= self.batch_bytes_max:
                self.ready.append(self.open.pop((topic, partition)))
                self.ready_keys.add((topic, partition))
                self.lock.notify_all()
                return handle, True
        return handle, wake

    def add_many(self, topic: str, partition: int, key: bytes | None, values: list[bytes], timestamp_ms: int,
                 size: int, future: Future) -> bool:
        """Add records with one future to the partition's open batch, or to a new one if they would
        push it past `batch_bytes_max`; returns whether the sender must be woken (joining an open
        batch needs no wake-up: its linger clock already runs)."""
        with self.lock:
            if self.closed:
                raise RuntimeError("the producer is closed")
            while self.buffered and self.buffered + len(values) > self.buffered_max:
                self.lock.wait()
            batch = self.open.get((topic, partition))
            wake = batch is None and self._may_send_locked((topic, partition))
            if batch is not None and batch.size_bytes + size > self.batch_bytes_max:
                self.ready.append(self.open.pop((topic, partition)))
                self.ready_keys.add((topic, partition))
                batch = None
                wake = True
            if batch is None:
                batch = self.open[(topic, partition)] = ProducerBatch(topic, partition, created_s=self.clock())
                self.movable[(topic, partition)] = None
            batch.futures.append((future, batch.records.count))
            # Built here, under the lock, in one step with the append: built outside it, the sender's
            # thread ran alongside this one for the whole list and the producer used more CPU.
            batch.records.add_many([(key, value, timestamp_ms) for value in values])
            batch.size_bytes += size
            self.buffered += len(values)
            if batch.records.count >= self.batch_records_max or batch.size_bytes >= self.batch_bytes_max:
                self.ready.append(self.open.pop((topic, partition)))
                self.ready_keys.add((topic, partition))
                self.lock.notify_all()
                wake = True
        return wake

    def _may_send_locked(self, key: tuple[str, int]) -> bool:
        """Whether a batch this partition opens now needs the sender woken to start its linger
        clock (under the lock). Not while the partition has all the requests out it may: the
        sender looks at its open batch again when an answer comes, and with one request in
        flight that saves a wake-up of the sender per request."""
        return self.in_flight.get(key, 0) < self.max_in_flight

    def ready_all(self) -> None:
        """Every open batch is ready now, lingering or not (a flush)."""
        with self.lock:
            self.ready.extend(self.open.values())
            self.ready_keys.update(self.open)
            self.open.clear()
            self.lock.notify_all()

    def wait_until_delivered(self, deadline_s: float | None, timeout_s: float | None) -> None:
        """Until every record added has its answer; TimeoutError at `deadline_s` (on `clock`)."""
        with self.lock:
            while self.buffered > 0:
                remaining = None if deadline_s is None else deadline_s - self.clock()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"{self.buffered} record(s) not delivered within {timeout_s} s")
                self.lock.wait(remaining if remaining is not None else 0.5)

    def close(self) -> None:
        """No more records; the sender ends once nothing is left to send or to answer."""
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    # --- batches out (the sender thread) ---------------------------------------------------------

    def drain(self) -> tuple[list[ProducerBatch], float | None, bool] | None:
        """The batches that may leave now, each counted in flight; when the first timer a batch waits
        for ends (a linger, a retry backoff; None: every batch held back waits for an answer), so the
        sender sleeps until then and no longer; and whether a partition recovers.
        None once closed with nothing left: the sender ends."""
        with self.lock:
            if self.closed and not self.ready and not self.open and not self.in_flight:
                return None
            now = self.clock()
            self._end_recoveries_locked()
            troubled = bool(self.recovering)
            # A lingered batch leaves only when its partition can send: while it has all
            # the requests in flight it may (or a full batch waits) it keeps filling, as
            # Kafka's accumulator does, instead of splitting into one small request per linger.
            lingering_until = None  # the first end of a linger of an open batch that may leave then
            for key in list(self.movable):
                batch = self.open.get(key)
                if (batch is None or self.in_flight.get(key, 0) >= self.max_in_flight or key in self.recovering
                        or key in self.ready_keys):
                    del self.movable[key]  # back when a request of it is answered, or a batch of it leaves
                elif now - batch.created_s >= self.linger_s:
                    del self.movable[key]
                    self.ready.append(self.open.pop(key))
                    self.ready_keys.add(key)
                else:
                    ends = batch.created_s + self.linger_s
                    lingering_until = ends if lingering_until is None else min(lingering_until, ends)
            sendable = []
            waiting = collections.deque()
            # A partition's batches leave in order: one held back (its partition has
            # all it may in flight, or it backs off before a retry) holds back every
            # later one, else a later sequence would reach the leader first.
            blocked: set[tuple[str, int]] = set()
            while self.ready:
                batch = self.ready.popleft()
                key = (batch.topic, batch.partition)
                in_flight = self.in_flight.get(key, 0)
                limit = 1 if key in self.recovering else self.max_in_flight
                if key in blocked or in_flight >= limit or batch.retry_at_s > now:
                    waiting.append(batch)
                    blocked.add(key)
                else:
                    self.in_flight[key] = in_flight + 1
                    sendable.append(batch)
            self.ready = waiting
            self.ready_keys = blocked
            for batch in sendable:  # its partition's open batch may follow once nothing is ahead of it
                self._may_move_locked((batch.topic, batch.partition))
            # A batch held back by a request in flight waits for its completion, not for a timer.
            timers = [b.retry_at_s for b in waiting if b.retry_at_s > now]
            if lingering_until is not None:
                timers.append(lingering_until)
        return sendable, min(timers) if timers else None, troubled

    def _end_recoveries_locked(self) -> None:
        """A partition has recovered once none of its batches is in flight and none waits to be
        retried (under the lock): from then on it sends as before, its open batch included."""
        for key in [k for k in self.recovering if k not in self.in_flight]:
            if not any(b.attempts and (b.topic, b.partition) == key for b in self.ready):
                self.recovering.discard(key)
                self._may_move_locked(key)

    def unencoded_ready(self) -> list[ProducerBatch]:
        """The ready batches not encoded yet (they wait behind a request in flight)."""
        with self.lock:
            return [b for b in self.ready if b.encoded is None]

    def track_unfinished(self, batch: ProducerBatch) -> None:
        """The batch has its ordinal: it is unfinished until answered for good."""
        with self.lock:
            self.unfinished.setdefault((batch.topic, batch.partition), set()).add(batch.ordinal)

    def release_backoffs(self, now: float, leader_is_newer: Callable[[ProducerBatch], bool]) -> bool:
        """Clear the backoff of every batch waiting to be retried whose partition has a newer leader
        than the one that failed it; whether any was cleared."""
        with self.lock:
            released = False
            if self.recovering:
                for batch in self.ready:
                    if batch.retry_at_s > now and leader_is_newer(batch):
                        batch.retry_at_s = 0.0  # a new leader: no need to wait out the old one's backoff
                        released = True
        return released

    # --- answers (the sender thread) -------------------------------------------------------------

    def has_earlier_unfinished(self, batch: ProducerBatch) -> bool:
        """An earlier batch of the partition is not yet answered for good (it failed, or went to
        another leader): what explains a leader's out-of-order refusal of this one."""
        with self.lock:
            return min(self.unfinished.get((batch.topic, batch.partition), {batch.ordinal})) < batch.ordinal

    def retry(self, batch: ProducerBatch) -> None:
        """The batch comes back to be sent again; its partition recovers."""
        key = (batch.topic, batch.partition)
        with self.lock:
            self._landed(key)
            self.recovering.add(key)
            self._requeue(batch)
            self.lock.notify_all()

    def done(self, batch: ProducerBatch) -> None:
        """The batch is answered for good (written or failed): its records leave the buffer."""
        key = (batch.topic, batch.partition)
        with self.lock:
            self._landed(key)
            unfinished = self.unfinished.get(key)
            if unfinished is not None:
                unfinished.discard(batch.ordinal)
            self.buffered -= batch.records.count
            self.lock.notify_all()

    def _landed(self, key: tuple[str, int]) -> None:
        """A request of this partition is no longer in flight (under the lock)."""
        left = self.in_flight.get(key, 0) - 1
        if left > 0:
            self.in_flight[key] = left
        else:
            self.in_flight.pop(key, None)
        self._may_move_locked(key)

    def _may_move_locked(self, key: tuple[str, int]) -> None:
        """Have `drain` look at this partition's open batch again (under the lock)."""
        if key in self.open:
            self.movable[key] = None

    def _requeue(self, batch: ProducerBatch) -> None:
        """Put a batch to retry among the ready ones, in its partition's order (under the lock)."""
        key = (batch.topic, batch.partition)
        self.ready_keys.add(key)
        after = None  # index of the partition's last ready batch that goes before this one
        for index, other in enumerate(self.ready):
            if (other.topic, other.partition) == key:
                if other.ordinal < 0 or other.ordinal > batch.ordinal:  # < 0: not encoded yet, so later
                    self.ready.insert(index, batch)
                    return
                after = index
        if after is None:
            self.ready.appendleft(batch)
        else:
            self.ready.insert(after + 1, batch)
