"""The simulated network between the members of the broker simulation: late, lost, twice, out of order.

Every message a member sends (a follower's fetch and the leader's answer, a produce answer to the
client, the controller's LeaderAndIsr, an AlterPartition request and its answer) is handed to
`SimNetwork.send`, which decides its fate from the schedule's random generator, so a seed replays
it exactly:

- it is delivered after a short latency, or, while faults are on, much later (delayed);
- while faults are on it may be lost (dropped) or delivered twice (duplicated);
- `take` hands out a due message: the oldest one, or while faults are on any due one (reordered);
- a cut link (`cut(src, dst)`, one way; both ways for a full partition) loses everything sent
  over it, including what was already in flight on it.

A message also names the incarnation of its receiver: a broker that crashed and restarted never
gets what was sent to its earlier process (its connections died with it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from replog.common.clock import ManualClock

CONTROLLER = 0  # the node id of the controller; brokers are 1..3
CLIENT = -1  # the producers

LATENCY_MS_MAX = 20
DELAY_MS_MAX = 3_000
DROP_P = 0.05
DUPLICATE_P = 0.05
DELAY_P = 0.15
REORDER_P = 0.3


@dataclass
class Message:
    due_ms: int
    sequence: int
    src: int
    dst: int
    payload: Any
    incarnation: int  # the receiver's incarnation at sending (0 for the controller and the client)


@dataclass
class NetworkCounts:
    sent: int = 0
    dropped: int = 0
    duplicated: int = 0
    delayed: int = 0
    reordered: int = 0
    cut_lost: int = 0
    partitions: int = 0

    @property
    def faults(self) -> int:
        return self.dropped + self.duplicated + self.delayed + self.reordered + self.cut_lost + self.partitions


@dataclass
class SimNetwork:
    rng: random.Random
    clock: ManualClock
    faulty: bool = False  # the schedule's stormy phases turn faults on
    in_flight: list[Message] = field(default_factory=list)
    cut_links: set[tuple[int, int]] = field(default_factory=set)
    counts: NetworkCounts = field(default_factory=NetworkCounts)
    _sequence: int = 0

    def send(self, src: int, dst: int, payload: Any, *, incarnation: int = 0) -> bool:
        """Put a message on the wire; False when the network lost it at once (the sender may notice by timeout)."""
        self.counts.sent += 1
        if (src, dst) in self.cut_links:
            self.counts.cut_lost += 1
            return False
        if self.faulty and self.rng.random() < DROP_P:
            self.counts.dropped += 1
            return False
        copies = 1
        if self.faulty and self.rng.random() < DUPLICATE_P:
            self.counts.duplicated += 1
            copies = 2
        for _ in range(copies):
            latency = self.rng.randint(1, LATENCY_MS_MAX)
            if self.faulty and self.rng.random() < DELAY_P:
                self.counts.delayed += 1
                latency += self.rng.randint(LATENCY_MS_MAX, DELAY_MS_MAX)
            self._sequence += 1
            now_ms = self.clock.monotonic_ms()
            self.in_flight.append(Message(now_ms + latency, self._sequence, src, dst, payload, incarnation))
        return True

    def take(self) -> Message | None:
        """A message whose time has come (None if none): the oldest, or while faulty sometimes another."""
        now_ms = self.clock.monotonic_ms()
        due = [m for m in self.in_flight if m.due_ms <= now_ms]
        if not due:
            return None
        message = min(due, key=lambda m: (m.due_ms, m.sequence))
        if self.faulty and len(due) > 1 and self.rng.random() < REORDER_P:
            message = self.rng.choice(due)
            self.counts.reordered += 1
        self.in_flight.remove(message)
        return message

    def next_due_ms(self) -> int | None:
        return min((m.due_ms for m in self.in_flight), default=None)

    def cut(self, src: int, dst: int, *, both_ways: bool) -> None:
        """Lose everything from `src` to `dst` (and back, for a full partition) until `heal`."""
        links = {(src, dst), (dst, src)} if both_ways else {(src, dst)}
        self.cut_links |= links
        self.counts.partitions += 1
        kept = [m for m in self.in_flight if (m.src, m.dst) not in links]
        self.counts.cut_lost += len(self.in_flight) - len(kept)
        self.in_flight = kept

    def heal(self) -> None:
        self.cut_links.clear()

    def pending(self, predicate) -> bool:
        return any(predicate(m) for m in self.in_flight)
