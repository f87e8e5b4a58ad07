"""How Linux schedules the threads of replog's processes: the one owner of `REPLOG_CPU_SCHEDULING`.

A replog service is a few Python threads that hand work to each other. On the
leader of an acks=all write, gRPC's poller thread receives a message and wakes
the handler thread waiting for it; the append wakes the followers' fetch
sessions; their answers wake the poller again: about a dozen wake-ups per
write. Under Linux's default policy (SCHED_OTHER) a thread that has slept
preempts the thread that wakes it. But the waker holds the interpreter lock, so
the woken thread runs only to find the lock taken and sleeps again: two context
switches, and the waker's remaining work waits for both. With a whole cluster on
a 2-core machine, py-spy found 17% of a leader's lock-held time inside
`Condition.notify` (bench/produce.py's 10 MB/s acks=all run).

SCHED_BATCH shares the CPU as SCHED_OTHER does (the same fair share, the same
nice levels), except that a woken thread never preempts a running one: it takes
an idle core, or the waker's core when the waker blocks, which a thread of ours
does within a few hundred microseconds (its next wait for a message). Any process
may choose it for itself, without privileges or a sysctl. On that run the
leader's preemptions fell from about 5,500 to 1,100 a second, its lock-held time
by a fifth, and `notify`'s share of it to 6%. 10 alternated pairs of the run,
with and without every process under SCHED_BATCH: p50 lower in 9, p99 in 6.
Only the services under it, with the producer's process not, gave no gain (p50
lower in 2 of 4): a woken SCHED_OTHER thread still preempts a batch one.

`REPLOG_CPU_SCHEDULING=realtime` is for a host where latency comes first. Every
thread runs under SCHED_RR at priority 1, the lowest real-time priority, and two
things change. A woken thread of ours runs before every ordinary thread: other
programs, and the kernel's own workers (page writeback, journal commits). And
Linux puts a woken real-time thread on a core that can run it now, and moves a
waiting one to a core as soon as that frees up, where the fair scheduler often
leaves it queued behind the thread on its own core. Among our own threads
nothing preempts, as under SCHED_BATCH: one priority, and round-robin slices of
100 ms only for a thread that runs that long. bench/produce.py --acks all
--rate-mb-per-s 10 (the whole cluster on one 2-core machine), 6 alternated pairs
against batch: p99 lower in 5 (3.38 to 4.99 ms against 4.82 to 6.00), p50 lower
in all 6 (2.12 to 2.33 against 2.29 to 2.56). With `--hops`, the request round
trip fell from p50 1.42 / p99 2.61 ms to 1.24 / 1.78; every hop's p99 about
halved, a follower's next request to the leader most (p50 266 to 168 us): it
leaves on gRPC's feeder thread and arrives on the leader's poller, two wake-ups
that no longer queue behind a running thread. Threads changed cores ten times
as often (5,800 against 600 a second, `perf stat -a`), with as many context
switches. The leader used a fifth more CPU (10.7 against 9.1 s) for as many
more round trips (10,485 against 9,076 in 15 s, each carrying fewer records):
1.0 ms per round trip either way. SCHED_FIFO gave the same figures as SCHED_RR,
which is kept because a thread that runs on cannot hold a core from its peers
for good.

The price is paid by everything else on the host: while our threads want every
core, ordinary threads get what Linux's real-time throttling leaves them
(`kernel.sched_rt_runtime_us`, by default 5% of each second), a ZooKeeper server
or an SSH session on the same host included. So it is not the default. It needs
CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1 (systemd: `LimitRTPRIO=1`);
without either the process says so once and runs under batch.

`configure()` sets it on the calling thread; the threads and processes started
after it inherit it. `service.run` calls it first, before the service starts any
thread. The operator has the last word: `REPLOG_CPU_SCHEDULING=normal` keeps the
default policy, and a process that already runs under another policy than
SCHED_OTHER (`chrt`, systemd's `CPUSchedulingPolicy=`) is left as it is, unless
it is the realtime policy inherited from a parent that chose it too. The
client library does not call it: the host program's threads are its own choice,
and a program that wants the gain calls `configure()` itself at start-up, as
bench/produce.py does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from replog.common.config import ConfigError

ENV = "REPLOG_CPU_SCHEDULING"
CHOICES = ("batch", "normal", "realtime")
DEFAULT = "batch"
# The lowest real-time priority: above every ordinary thread, below the kernel's own real-time
# threads (migration, watchdogs, threaded interrupts).
REALTIME_PRIORITY = 1

log = logging.getLogger(__name__)


def choice(environ: Mapping[str, str] = os.environ) -> str:
    """The policy asked for: the environment's value, else the default (ConfigError if unknown)."""
    value = environ.get(ENV, DEFAULT).strip().lower() or DEFAULT
    if value not in CHOICES:
        raise ConfigError(f"{ENV}={environ[ENV]!r}: must be one of {', '.join(CHOICES)}")
    return value


def configure() -> str:
    """Apply the chosen policy to this thread, and so to the threads and processes it starts later.
    Returns the policy in force: "batch", "normal", "realtime", or "operator's" when another policy
    was set from outside (then nothing changes). "realtime" without the privilege for it runs under
    "batch" instead, with a warning. ConfigError for an unknown REPLOG_CPU_SCHEDULING."""
    wanted = choice()
    if not hasattr(os, "SCHED_BATCH"):  # not Linux: the default policy stays
        return "normal"
    current = os.sched_getscheduler(0)
    if wanted == "realtime" and _is_ours_realtime(current):
        return "realtime"  # inherited from a parent that made the same choice
    if current not in (os.SCHED_OTHER, os.SCHED_BATCH):
        return "operator's"
    if wanted == "realtime":
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(REALTIME_PRIORITY))
            return "realtime"
        except OSError as exc:
            log.warning("%s=realtime: cannot run under SCHED_RR (%s); it needs CAP_SYS_NICE or an "
                        "RLIMIT_RTPRIO of at least %d (systemd: LimitRTPRIO=%d). Running under "
                        "SCHED_BATCH instead", ENV, exc, REALTIME_PRIORITY, REALTIME_PRIORITY)
            wanted = "batch"
    policy = os.SCHED_BATCH if wanted == "batch" else os.SCHED_OTHER
    if current != policy:
        try:
            os.sched_setscheduler(0, policy, os.sched_param(0))
        except OSError as exc:  # a seccomp profile or an LSM may refuse it: run on, as before
            log.warning("cannot set the CPU scheduling policy %s (%s); the default stays", wanted, exc)
            return "normal"
    return wanted


def _is_ours_realtime(current: int) -> bool:
    return current == os.SCHED_RR and os.sched_getparam(0).sched_priority == REALTIME_PRIORITY
