"""The broker's turn: one thread at a time runs a per-partition loop, and waiting ones sleep.

What takes it: the loops that make a system call per partition -- a produce
request's appends, a replica fetch's reads, a follower's appends of a fetch
answer, a StopReplica's deletions. Not a LeaderAndIsr: for replicas already
hosted it makes none, and holding it there delayed the new leader's fetch
answers. One Turn per broker process (bootstrap.py hands the same one to each).

Invariants: never held while waiting for anything another thread does (long
polls, acks=all waits, RPCs); the holder only takes partition locks, so the
order is always the turn, then partition locks. It protects no data (the
partition locks do); it only decides who runs. Re-entrant, so a loop may call
code that takes it again.

Why: each system call in such a loop releases the GIL, and with other threads
ready it moves to another core and back once per call, which on two cores can
cost more than the work between calls. A thread waiting here is blocked, not
competing for the GIL. A plain lock: a fair one, and priorities for
replication, were measured and lost (docs/perf/turn.md).
"""

from __future__ import annotations

import threading


class Turn:
    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> Turn:
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()
