"""A bound on the file descriptors the broker's logs hold, given back least recently used first.

Theory of operation (docs/perf/segment-descriptors.md)
-----------------------------------------------------
A segment opens its file on first use and keeps the descriptor until a flush,
a roll or a close gives it back (segment.py). Under a flush policy that never
fsyncs on its own, every replica written to keeps one, so a broker hosting
more busy replicas than its open-files limit allows would run out
(EMFILE) with nothing bounding it. `DescriptorBudget` is that bound: one per
process, `descriptors_max` derived from the soft RLIMIT_NOFILE minus headroom
for sockets, ZooKeeper, checkpoints and short-lived reads
(`budget_for_limit`).

Each hosted log registers once (`register`) and gets a `LogDescriptors`: its
segments report every descriptor they open and close through it, and stamp it
on every use (`touch`, one counter step). When an open takes the count over
`descriptors_max`, the opening thread gives back descriptors of the least
recently used logs until the count is `descriptors_max / 8` below the bound,
so the cost of choosing is paid once per many opens.

Safety: a descriptor must never be closed while another thread reads or
writes through it, or the number may be reused by another file and data
written to the wrong one. Every call on a hosted log is made with its owner's
lock held (HostedPartition.run), so a victim's descriptors are closed only
after a *non-blocking* acquire of its owner's lock succeeded; a busy log is
skipped. The opener never waits for a lock while choosing (only for the
budget's own mutex, which no one holds while waiting for anything else), so
this cannot deadlock, and its own log is never a victim. A log whose
descriptor was given back reopens it on its next use; an fsync through the new
descriptor covers what was written through the old one (the page cache belongs
to the file, and an unreported write-back error is reported to the next fsync).

The bound is soft: when every candidate is busy, or another thread is already
making room, an open goes ahead above it; the headroom, and the EMFILE
handling of the callers (logdirs/log_dir_failures.py), cover that.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import resource
import threading
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)

_USES = itertools.count(1)  # a use stamp: next() on it is one atomic step, no lock needed
HEADROOM_MIN = 256  # descriptors kept for sockets, ZooKeeper, checkpoints, temporary reads
HEADROOM_FRACTION = 4  # ... or a quarter of the limit, whichever is more


def process_budget() -> DescriptorBudget | None:
    """The budget under this process's soft RLIMIT_NOFILE (raised first by the broker's main); None if unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    return DescriptorBudget(budget_for_limit(soft))


def budget_for_limit(open_files_limit: int) -> int:
    """Descriptors the logs may hold under a soft RLIMIT_NOFILE of `open_files_limit` (at least 16)."""
    headroom = max(HEADROOM_MIN, open_files_limit // HEADROOM_FRACTION)
    return max(open_files_limit - headroom, 16)


class OwnerLock(Protocol):
    def acquire(self, blocking: bool = ...) -> bool: ...

    def release(self) -> None: ...


class LogDescriptors:
    """One log's account with the budget; its segments call `opened`, `closed` and `touch`."""

    __slots__ = ("_budget", "owner_lock", "release", "open_count", "last_used")

    def __init__(self, budget: DescriptorBudget, owner_lock: OwnerLock, release: Callable[[], None]) -> None:
        self._budget = budget
        self.owner_lock = owner_lock  # held by every caller of the log
        self.release = release  # closes every descriptor the log holds (the owner's lock held)
        self.open_count = 0
        self.last_used = 0

    def opened(self) -> None:
        self._budget.opened(self)

    def closed(self) -> None:
        self._budget.closed(self)

    def touch(self) -> None:
        self.last_used = next(_USES)


class Untracked:
    """The account of a log no budget bounds (tests, tools, a log being opened)."""

    __slots__ = ()

    def opened(self) -> None:
        pass

    def closed(self) -> None:
        pass

    def touch(self) -> None:
        pass


UNTRACKED = Untracked()


class DescriptorBudget:
    def __init__(self, descriptors_max: int) -> None:
        assert descriptors_max > 0, descriptors_max
        self.descriptors_max = descriptors_max
        self._release_to = descriptors_max - max(descriptors_max // 8, 1)  # where making room stops
        self._mutex = threading.Lock()  # guards the counts; never held while waiting for anything else
        self._making_room = threading.Lock()  # one thread chooses victims at a time
        self._open = 0
        self._holders: dict[LogDescriptors, None] = {}  # the logs holding at least one descriptor
        self.logs_released = 0  # logs whose descriptors were given back to make room
        self.busy_skipped = 0  # victims passed over because their owner was using them

    @property
    def open_count(self) -> int:
        return self._open

    def register(self, owner_lock: OwnerLock, release: Callable[[], None]) -> LogDescriptors:
        """The account of a log whose every call is made holding `owner_lock`."""
        return LogDescriptors(self, owner_lock, release)

    def opened(self, holder: LogDescriptors) -> None:
        with self._mutex:
            self._open += 1
            holder.open_count += 1
            if holder.open_count == 1:
                self._holders[holder] = None
            over = self._open > self.descriptors_max
        holder.touch()
        if over:
            self._make_room(holder)

    def closed(self, holder: LogDescriptors) -> None:
        with self._mutex:
            assert holder.open_count > 0 and self._open > 0, (holder.open_count, self._open)
            self._open -= 1
            holder.open_count -= 1
            if holder.open_count == 0:
                del self._holders[holder]

    def _make_room(self, current: LogDescriptors) -> None:
        """Give back descriptors of the least recently used logs other than `current`, skipping busy ones."""
        if not self._making_room.acquire(blocking=False):
            return  # another thread is at it; this open goes ahead above the bound for now
        try:
            with self._mutex:
                excess = self._open - self._release_to
                if excess <= 0:
                    return
                # more candidates than the excess: some are busy, and a log may hold one descriptor only
                candidates = heapq.nsmallest(excess * 2 + 16, (h for h in self._holders if h is not current),
                                             key=_last_used)
            released = skipped = 0
            for holder in candidates:
                if self._open <= self._release_to:
                    break
                if not holder.owner_lock.acquire(blocking=False):
                    skipped += 1
                    continue
                try:
                    holder.release()
                finally:
                    holder.owner_lock.release()
                released += 1
            self.logs_released += released
            self.busy_skipped += skipped
            if self._open > self.descriptors_max:
                logger.warning("log descriptors above their budget (%d open, %d allowed): %d logs given back, "
                               "%d busy", self._open, self.descriptors_max, released, skipped)
        finally:
            self._making_room.release()


def _last_used(holder: LogDescriptors) -> int:
    return holder.last_used
