"""Delayed operations waiting on keys: the broker's "purgatory", without threads.

Theory of operation (docs/architecture.md, "An acks=all produce"; Kafka `DelayedOperationPurgatory`):

A request that cannot be answered yet (acks=-1 produce waiting for the HW, a
long-poll fetch waiting for bytes) is parked here, watching one or more keys
(usually `TopicPartition`s), with a deadline. Nothing polls: the adapter calls
- `check(key)` when something about `key` changed (HW advanced, records
  appended, role or ISR changed). Every op watching `key` is asked
  `try_complete(key)` (only that key changed: an op over a thousand
  partitions does not re-read the other 999 each time); those that say True leave the purgatory (from all their
  keys) and are returned for the adapter to answer.
- `expire(now_ms)` from a timer. Ops whose deadline passed get `on_expire()`
  and are returned, earliest deadline first.

`add` first asks the op to `try_complete()` (the condition may already hold),
and only then parks it. The purgatory holds at most `operations_max` ops; when
full it refuses (`PurgatoryFull`) and the adapter answers at once (expire the
op). Each op completes or expires exactly once.
"""

from __future__ import annotations

import enum
import heapq
from dataclasses import dataclass
from typing import Generic, Hashable, Iterable, Protocol, TypeVar


class DelayedOperation(Protocol):
    def try_complete(self, changed: Hashable | None = None) -> bool:
        """True when the op is done (it records its own result). `changed` is the key that
        changed (from `check`), so an op over many keys need look only at that one; None
        means look at everything."""
        ...

    def on_expire(self) -> None:
        """The deadline passed first (the op records a timeout result)."""
        ...


OpT = TypeVar("OpT", bound=DelayedOperation)
KeyT = TypeVar("KeyT", bound=Hashable)


class AddOutcome(enum.Enum):
    COMPLETED_AT_ONCE = "completed_at_once"  # answer now
    WATCHING = "watching"  # parked; check/expire will return it
    PURGATORY_FULL = "purgatory_full"  # not parked; call op.on_expire() and answer now


@dataclass
class _Entry(Generic[OpT, KeyT]):
    op: OpT
    keys: tuple[KeyT, ...]
    deadline_ms: int


class Purgatory(Generic[OpT, KeyT]):
    def __init__(self, *, operations_max: int) -> None:
        assert operations_max > 0
        self._operations_max = operations_max
        self._next_id = 0
        self._entries: dict[int, _Entry[OpT, KeyT]] = {}
        self._watchers: dict[KeyT, dict[int, None]] = {}  # insertion-ordered sets of entry ids
        self._deadlines: list[tuple[int, int]] = []  # heap of (deadline_ms, entry id); lazy deletion

    def __len__(self) -> int:
        return len(self._entries)

    def watched_count(self, key: KeyT) -> int:
        return len(self._watchers.get(key, {}))

    def add(self, op: OpT, keys: Iterable[KeyT], deadline_ms: int) -> AddOutcome:
        watch_keys = tuple(dict.fromkeys(keys))
        assert watch_keys, "a delayed operation watches at least one key"
        if op.try_complete():
            return AddOutcome.COMPLETED_AT_ONCE
        if len(self._entries) >= self._operations_max:
            return AddOutcome.PURGATORY_FULL
        entry_id = self._next_id
        self._next_id += 1
        self._entries[entry_id] = _Entry(op, watch_keys, deadline_ms)
        for key in watch_keys:
            self._watchers.setdefault(key, {})[entry_id] = None
        heapq.heappush(self._deadlines, (deadline_ms, entry_id))
        return AddOutcome.WATCHING

    def check(self, key: KeyT) -> list[OpT]:
        """Ops watching `key` that complete now, in the order they were added."""
        completed: list[OpT] = []
        for entry_id in list(self._watchers.get(key, {})):
            entry = self._entries[entry_id]
            if entry.op.try_complete(key):
                self._remove(entry_id)
                completed.append(entry.op)
        return completed

    def expire(self, now_ms: int) -> list[OpT]:
        """Ops whose deadline is <= now_ms, after `on_expire()`, earliest deadline first."""
        expired: list[OpT] = []
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, entry_id = heapq.heappop(self._deadlines)
            entry = self._entries.get(entry_id)
            if entry is None:
                continue  # completed earlier
            self._remove(entry_id)
            entry.op.on_expire()
            expired.append(entry.op)
        self._compact_deadlines()
        return expired

    def _remove(self, entry_id: int) -> None:
        entry = self._entries.pop(entry_id)
        for key in entry.keys:
            watchers = self._watchers[key]
            del watchers[entry_id]
            if not watchers:
                del self._watchers[key]

    def _compact_deadlines(self) -> None:
        # Completed ops leave stale heap items; rebuild when they dominate, so memory stays bounded.
        if len(self._deadlines) > 2 * len(self._entries) + 64:
            self._deadlines = [(e.deadline_ms, i) for i, e in self._entries.items()]
            heapq.heapify(self._deadlines)
