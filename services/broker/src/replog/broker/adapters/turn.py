"""The broker's turn: one thread at a time runs a per-partition loop, and waiting ones sleep.

Why: the interpreter runs one thread at a time anyway (the GIL), but every system
call inside a loop (a pwrite per appended partition, a pread per partition a
follower reads, a lazy open) lets the GIL go, and with other threads ready to
run it moves to another core and back once per call. On this 2-core machine
that hand-over can cost more than the work between calls. Measured in-process
on 3,334 partitions of 100-byte acks=1 produce requests (50 partitions each),
the same appends took 138 ms of CPU from one thread, 200 ms from two, 368 ms
from eight and 383 ms from 67 (one per request, as a 10K-partition failover's
first writes arrive); with this turn held around each request's appends, eight
threads took 155 ms and 67 took 187 ms. A thread waiting for the turn is
blocked on the lock, not competing for the GIL, so the thread that holds it
gets the GIL back after each system call without a hand-over. In the whole
10K-partition failover (bench/failover.py, 5 alternated pairs against the code
without it) it was a smaller gain: the new leader's CPU in the window fell by
about 10% and the median time to writable by about 5%, since much of that
window's contention is gRPC's own.

What takes it: the loops that make a system call per partition -- a produce
request's appends, a replica fetch's reads, a follower's appends of a fetch
answer, a StopReplica's deletions. Not a LeaderAndIsr as a whole (but see
Yielding below): for replicas already hosted it makes none, and held for a
failover's 6,666 ISR-only decisions the turn kept the new leader's fetch
answers waiting (4 alternated pairs without it: 1.04, 1.29, 1.34, 1.25 s
against 1.20, 1.38, 1.45, 1.18 s). One Turn per broker process (bootstrap.py
hands the same one to each). Never while waiting for anything another thread
does (long polls, acks=-1 waits, RPCs): the holder only takes partition locks,
which no one holds while waiting for the turn, so the order is always turn,
then partition locks. It protects no data (the partition locks do); it only
decides who runs.

A plain lock, held for a whole loop: a fair one, handed over in arrival order
every 64 partitions so that a 6,666-partition LeaderAndIsr would not hold a
follower's fetch for its length, cost more in hand-overs than it saved (3
alternated pairs of that failover: 1.38, 1.31, 1.29 s against 1.29, 1.19,
1.14 s). Re-entrant, so a loop may call code that takes it again.

No priorities either. Letting replication (a follower's fetch read, a
follower's appends) take the turn ahead of the produce requests waiting for
it, always or every other turn, made the failover's first moved partitions
writable sooner but its last one later: p10 0.70-0.80 s against 0.80-0.94 s,
the last 0.95-1.15 s against 0.88-1.02 s (6 alternated pairs). Replicating
while the appends go on splits the work into more, smaller fetch rounds, and
the last partition waits for all of it. Nor does a fetch that only reports
caught-up positions skip the turn: 4 pairs gave 0.94-1.10 s against
0.86-1.24 s, no gain.

Yielding: work nobody waits on takes the turn with `when_idle`, once no other
thread holds it or waits for it, or at a deadline whoever waits. After a
broker failure each surviving leader is told that the dead follower left the
ISR of every partition it already led (an ISR-only LeaderAndIsr,
state_changes.py). Applied at once it landed in the middle of the moved
partitions' appends and first fetch rounds and ran beside them on one GIL: in
one traced 10K-partition failover a follower fetch's read of 1,571 partitions
took 156 ms beside it, four times its in-process cost. Applied 100 partitions at a
time as the turn falls idle (at most 0.5 s late), it runs mostly while the
leader waits for its follower's next fetch: in 18 alternated pairs of that
failover (on a day HEAD took 1.1-1.66 s) 12 were faster, by up to 0.54 s, and
6 slower, 5 of them by at most 0.27 s and one by 1.0 s (its new leader used
twice its usual CPU; not seen again in 19 later runs); the median went from
1.38 to 1.24 s, and from 0.87 to 0.76 s when counted from the end of the new
leader's become_leader, past the noise of ZooKeeper and the controller before
it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Turn:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._idle = threading.Condition(threading.Lock())
        self._wanted = 0  # threads holding or waiting for the turn (a re-entry counts again)

    def __enter__(self) -> Turn:
        with self._idle:
            self._wanted += 1
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()
        with self._idle:
            self._wanted -= 1
            if not self._wanted:
                self._idle.notify_all()

    @property
    def wanted(self) -> int:
        """How many threads hold the turn or wait for it (a re-entry counts again)."""
        return self._wanted

    @contextmanager
    def when_idle(self, deadline: float) -> Iterator[Turn]:
        """The turn, taken once no other thread holds it or waits for it, or at `deadline`
        (`time.monotonic()`) in any case: for work nobody is waiting on. Not for a thread
        that holds the turn already."""
        while True:
            with self._idle:
                while self._wanted and (remaining := deadline - time.monotonic()) > 0:
                    self._idle.wait(remaining)
            self.__enter__()
            with self._idle:
                alone = self._wanted == 1
            if alone or time.monotonic() >= deadline:
                break
            self.__exit__()  # another thread came for it meanwhile: it goes first
        try:
            yield self
        finally:
            self.__exit__()
