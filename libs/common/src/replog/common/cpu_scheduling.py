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

`configure()` sets it on the calling thread; the threads and processes started
after it inherit it. `service.run` calls it first, before the service starts any
thread. The operator has the last word: `REPLOG_CPU_SCHEDULING=normal` keeps the
default policy, and a process that already runs under another policy than
SCHED_OTHER (`chrt`, systemd's `CPUSchedulingPolicy=`) is left as it is. The
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
CHOICES = ("batch", "normal")
DEFAULT = "batch"

log = logging.getLogger(__name__)


def choice(environ: Mapping[str, str] = os.environ) -> str:
    """The policy asked for: the environment's value, else the default (ConfigError if unknown)."""
    value = environ.get(ENV, DEFAULT).strip().lower() or DEFAULT
    if value not in CHOICES:
        raise ConfigError(f"{ENV}={environ[ENV]!r}: must be one of {', '.join(CHOICES)}")
    return value


def configure() -> str:
    """Apply the chosen policy to this thread, and so to the threads and processes it starts later.
    Returns the policy in force: "batch", "normal", or "operator's" when another policy was set from
    outside (then nothing changes). ConfigError for an unknown REPLOG_CPU_SCHEDULING."""
    wanted = choice()
    if not hasattr(os, "SCHED_BATCH"):  # not Linux: the default policy stays
        return "normal"
    current = os.sched_getscheduler(0)
    if current not in (os.SCHED_OTHER, os.SCHED_BATCH):
        return "operator's"
    policy = os.SCHED_BATCH if wanted == "batch" else os.SCHED_OTHER
    if current != policy:
        try:
            os.sched_setscheduler(0, policy, os.sched_param(0))
        except OSError as exc:  # a seccomp profile or an LSM may refuse it: run on, as before
            log.warning("cannot set the CPU scheduling policy %s (%s); the default stays", wanted, exc)
            return "normal"
    return wanted
