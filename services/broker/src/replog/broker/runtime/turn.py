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
answer, a StopReplica's deletions. Not a LeaderAndIsr: for replicas already
hosted it makes none, and held for a failover's 6,666 ISR-only decisions the
turn kept the new leader's fetch answers waiting (4 alternated pairs without
it: 1.04, 1.29, 1.34, 1.25 s against 1.20, 1.38, 1.45, 1.18 s). One Turn per
broker process (bootstrap.py hands the same one to each). Never while waiting
for anything another thread does (long polls, acks=-1 waits, RPCs): the holder
only takes partition locks, which no one holds while waiting for the turn, so
the order is always turn, then partition locks. It protects no data (the
partition locks do); it only decides who runs.

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

Nor does an ISR-only LeaderAndIsr yield the turn. After a broker failure each
surviving leader hears that the dead follower left the ISR of every partition
it already led; applied at once it lands among the moved partitions' first
appends and fetch rounds (in one traced failover a follower fetch's read of
1,571 partitions took 156 ms beside it, four times its in-process cost).
Applying it 100 partitions at a time, each chunk once no other thread held or
waited for the turn, at most 0.5 s late, was measured in 25 alternated pairs
of the 10K-partition failover on a slow day (1.1-1.7 s): 15 faster and 10
slower, the median difference 0.13 s faster and the mean 0.06 s, while the
partitions that keep their leader took their first acks=all write again 0.21 s
later (median of 7 pairs, bench/failover.py --isr-only-sample 100; 6 of the 7
later). An uncertain gain for the moved partitions, paid by twice as many
others: not kept.
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
