"""cpu_scheduling.configure in real processes: the policy a replog process asks Linux for,
unless the operator chose otherwise, and the services running under it.

`configure` changes the calling thread's policy, so each case runs in a child process: the
test runner's own threads keep theirs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replog.common import cpu_scheduling

pytestmark = pytest.mark.integration

PROBE = """
import os, threading
from replog.common import cpu_scheduling
names = {os.SCHED_OTHER: "other", os.SCHED_BATCH: "batch", os.SCHED_IDLE: "idle"}
said = cpu_scheduling.configure()
seen = []
thread = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(0)))
thread.start(); thread.join()
print(said, names[os.sched_getscheduler(0)], names[seen[0]])
"""


def probe(env_value: str | None = None, start_policy: int | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != cpu_scheduling.ENV}
    if env_value is not None:
        env[cpu_scheduling.ENV] = env_value
    start = None if start_policy is None else (lambda: os.sched_setscheduler(0, start_policy, os.sched_param(0)))
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, preexec_fn=start, capture_output=True,
                            text=True, timeout=60, check=True)
    return result.stdout.split()


def test_the_default_is_batch_and_threads_started_after_inherit_it():
    assert probe(start_policy=os.SCHED_OTHER) == ["batch", "batch", "batch"]


def test_normal_keeps_or_restores_the_default_policy():
    assert probe("normal", start_policy=os.SCHED_OTHER) == ["normal", "other", "other"]
    assert probe("normal", start_policy=os.SCHED_BATCH) == ["normal", "other", "other"]


def test_a_policy_set_from_outside_is_left_alone():
    assert probe(start_policy=os.SCHED_IDLE) == ["operator's", "idle", "idle"]


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
        "replog-broker: bad configuration: REPLOG_CPU_SCHEDULING='fast': must be one of batch, normal")
