"""How Linux schedules the threads of replog's processes: the one owner of `REPLOG_CPU_SCHEDULING`.

- `batch` (the default): SCHED_BATCH, the fair share of SCHED_OTHER except that a woken
  thread never preempts a running one. Our threads hand work to each other while holding
  the interpreter lock, so a woken thread that preempts its waker only finds the lock
  taken and sleeps again. Any process may choose it, without privileges.
- `realtime`: SCHED_RR at priority 1, the lowest real-time priority. Our woken threads run
  before every ordinary thread on the host and go to a core that can run them now: a lower
  acks=all latency, paid by everything else on the host, which gets only what real-time
  throttling leaves. So it is opt-in, and needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at
  least 1 (systemd: `LimitRTPRIO=1`); without either the process says so once and runs
  under batch.
- `normal`: Linux's default policy, left as it is.

`configure()` sets the policy on the calling thread; threads and processes started after
it inherit it, so `service.run` calls it before the service starts any thread. The
operator has the last word: a process already under another policy than SCHED_OTHER
(`chrt`, systemd's `CPUSchedulingPolicy=`) is left as it is, unless it is the realtime
policy inherited from a parent that chose it too. The client library does not call it: a
host program that wants the gain calls `configure()` itself at start-up, as
bench/produce.py does (the producer's threads count: a woken SCHED_OTHER thread still
preempts a batch one).

The measurements behind each choice, and SCHED_FIFO's: docs/perf/cpu-scheduling.md.
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
