"""cpu_scheduling.configure in real processes: the policy a replog process asks Linux for,
unless the operator chose otherwise, and the services running under it.

`configure` changes the calling thread's policy, so each case runs in a child process: the
test runner's own threads keep theirs."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from replog.common import cpu_scheduling

pytestmark = pytest.mark.integration

PROBE = """
import os, threading
from replog.common import cpu_scheduling
names = {os.SCHED_OTHER: "other", os.SCHED_BATCH: "batch", os.SCHED_IDLE: "idle", os.SCHED_RR: "rr"}
def policy():
    name = names[os.sched_getscheduler(0)]
    return f"{name}:{os.sched_getparam(0).sched_priority}" if name == "rr" else name
said = cpu_scheduling.configure()
seen = []
thread = threading.Thread(target=lambda: seen.append(policy()))
thread.start(); thread.join()
print(said, policy(), seen[0])
"""

CAP_SYS_NICE = 23
PR_CAPBSET_DROP = 24


def _without_sys_nice() -> None:
    """In the child before exec: drop CAP_SYS_NICE from the bounding set, so the probe runs without
    the privilege a real-time policy needs, even as root (its RLIMIT_RTPRIO is 0 by default)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE)")


def run_probe(env_value: str | None = None, start_policy: int | None = None, start_priority: int = 0,
              privileged: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != cpu_scheduling.ENV}
    if env_value is not None:
        env[cpu_scheduling.ENV] = env_value

    def start() -> None:
        if start_policy is not None:
            os.sched_setscheduler(0, start_policy, os.sched_param(start_priority))
        if not privileged:
            _without_sys_nice()

    return subprocess.run([sys.executable, "-c", PROBE], env=env, preexec_fn=start, capture_output=True,
                          text=True, timeout=60, check=True)


def probe(env_value: str | None = None, start_policy: int | None = None, start_priority: int = 0) -> list[str]:
    return run_probe(env_value, start_policy, start_priority).stdout.split()


def test_the_default_is_batch_and_threads_started_after_inherit_it():
    assert probe(start_policy=os.SCHED_OTHER) == ["batch", "batch", "batch"]


def test_normal_keeps_or_restores_the_default_policy():
    assert probe("normal", start_policy=os.SCHED_OTHER) == ["normal", "other", "other"]
    assert probe("normal", start_policy=os.SCHED_BATCH) == ["normal", "other", "other"]


def test_a_policy_set_from_outside_is_left_alone():
    assert probe(start_policy=os.SCHED_IDLE) == ["operator's", "idle", "idle"]


def test_realtime_puts_every_thread_under_round_robin_at_the_lowest_real_time_priority():
    assert probe("realtime", start_policy=os.SCHED_OTHER) == ["realtime", "rr:1", "rr:1"]
    assert probe("realtime", start_policy=os.SCHED_BATCH) == ["realtime", "rr:1", "rr:1"]


def test_a_child_of_a_realtime_process_keeps_the_policy_it_inherited():
    assert probe("realtime", start_policy=os.SCHED_RR, start_priority=1) == ["realtime", "rr:1", "rr:1"]
    # Another real-time priority is the operator's (chrt), whatever the variable says.
    assert probe("realtime", start_policy=os.SCHED_RR, start_priority=5) == ["operator's", "rr:5", "rr:5"]


def test_realtime_without_the_privilege_runs_under_batch_and_says_what_it_needs():
    result = run_probe("realtime", start_policy=os.SCHED_OTHER, privileged=False)
    assert result.stdout.split() == ["batch", "batch", "batch"]
    assert "REPLOG_CPU_SCHEDULING=realtime: cannot run under SCHED_RR" in result.stderr
    assert "CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1" in result.stderr


def test_every_service_process_and_thread_runs_under_batch(shared_cluster):
    services = [p for p in shared_cluster.processes.values() if p.role != "zookeeper"]
    assert {p.role for p in services} == {"controller", "broker", "gateway"}
    for process in services:
        threads = [int(t) for t in os.listdir(f"/proc/{process.pid}/task")]
        assert {os.sched_getscheduler(t) for t in threads} == {os.SCHED_BATCH}, process.name


def test_an_unknown_choice_stops_a_service_at_start_up_in_one_line(venv_bin, tmp_path):
    env = {**os.environ, cpu_scheduling.ENV: "fast"}
    result = subprocess.run([str(venv_bin / "replog-broker")], env=env, capture_output=True, text=True,
                            timeout=30, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "replog-broker: bad configuration: REPLOG_CPU_SCHEDULING='fast': must be one of batch, normal, realtime")
