"""Unclean leader election on (issue 39, section 3): loss only after an unclean election, and the
controller says so.

With `unclean.leader.election.enable=true` and `min.insync.replicas=1`, a follower killed leaves
the leader alone in the ISR, which acknowledges writes no other replica has; the leader killed
and the stale follower started again, the controller elects the follower from outside the ISR.
The history checker then finds lost records, and every one of them was acknowledged while the
old leader was alone in the ISR, before the unclean election. The controller reports the election
in its metric (replog_controller_unclean_leader_elections_total), names the partition in its
log and its span, and `replog topics describe` flags it (unclean-leader); writes acknowledged
after the election are kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from replog.devcluster import ClusterSpec
from tests.fault.history import checker
from tests.fault.history.cells import caught_up, read_final_logs
from tests.fault.history.history import History, Ok
from tests.fault.history.workload import Workload
from tests.integration.broker_helpers import (
    create_topic,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

TOPIC = "unclean"
TP = (TOPIC, 0)


def acked_since(history: History, since_s: float) -> int:
    return sum(1 for e in history.events() if isinstance(e, Ok) and e.at_s >= since_s)


def unclean_elections(cluster) -> float:
    port = cluster.processes["controller-1"].metrics_port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = [line.split()[-1] for line in text.splitlines()
             if line.startswith("replog_controller_unclean_leader_elections_total ")]
    return float(found[0]) if found else 0.0


def test_only_records_acknowledged_by_a_lone_leader_are_lost_after_an_unclean_election(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=2, gateways=1, zookeeper_session_timeout_ms=3000,
                                          extra_args={"broker": ["--replica-lag-time-max-ms", "2000"]}))
    history = History()
    try:
        run_and_check(cluster, history)
    finally:
        cluster.discard()


def run_and_check(cluster, history: History) -> None:
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1, 2)}, {"unclean.leader.election.enable": "true",
                                             "min.insync.replicas": "1"})
        wait_for_isr(cluster, zk, TOPIC, {1, 2}, 30)
        bootstrap = [p.address for p in cluster.of_role("broker")]
        before = Workload(history, bootstrap, {TOPIC: 1})
        before.start()
        try:
            wait_for(lambda: acked_since(history, 0.0) > 50, 30, "writes with both replicas in the ISR")
            follower_killed_at = time.monotonic()
            cluster.kill("broker-2")
            wait_for_isr(cluster, zk, TOPIC, {1}, 30)
            alone_since = time.monotonic()
            wait_for(lambda: acked_since(history, alone_since) > 50, 30, "writes acknowledged by broker 1 alone")
            cluster.kill("broker-1")
        finally:
            before.stop(5)  # the partition is offline: what is unanswered stays indeterminate
        cluster.start("broker-2")
        wait_for_leader(cluster, zk, TOPIC, 2, 60)
        # Until now only broker 1 could acknowledge: an answer it sent just before its kill may reach the
        # producer after `kill` returned, so the lone leader's time ends at the election, not at the kill.
        elected_from = time.monotonic()
        assert "unclean-leader" in describe_topic(cluster), "replog topics describe does not flag the partition"
        # New producers: the old ones' sequence numbers went with the lost records, and the new leader
        # refuses their next batches as out of order (an idempotent producer's epoch is not bumped).
        after = Workload(history, bootstrap, {TOPIC: 1}, first_producer=len(before.producers))
        after.start()
        try:
            wait_for(lambda: acked_since(history, elected_from) > 50, 60, "writes after the unclean election")
        finally:
            after.stop(60)
        cluster.start("broker-1")
        cluster.wait_healthy(["broker-1"], 60)
        state = wait_for_isr(cluster, zk, TOPIC, {1, 2}, 60)
    (high_watermark,) = wait_for(lambda: caught_up(cluster, state, TOPIC, 0), 60, "both replicas to hold the log")
    report = checker.check(history.events(), read_final_logs(bootstrap, {TP: high_watermark}))

    lost = [v for v in report.violations if v.rule == "lost"]
    assert lost, "the unclean election lost nothing: the scenario did not happen"
    late = [v for v in lost if not follower_killed_at <= v.acknowledged_at_s <= elected_from]
    assert not late, f"records lost that were acknowledged outside the lone leader's time: {late[:5]}"
    assert report.count("duplicated") == report.count("out_of_order") == 0, checker.evidence(report)
    assert unclean_elections(cluster) >= 1
    log = cluster.log_path("controller-1").read_text()
    assert "unclean leader election of ['unclean-0']" in log
    wait_for(lambda: unclean_spans(cluster), 30, "the controller's span naming the unclean election")


def describe_topic(cluster) -> str:
    """`replog topics describe` as an operator runs it."""
    command = [str(Path(sys.executable).parent / "replog"), "--gateway", cluster.gateway_address, "topics",
               "describe", TOPIC]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def unclean_spans(cluster) -> list[dict]:
    path = cluster.trace_dir / "replog-controller-1.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [span for span in map(json.loads, lines)
            if span["attributes"].get("unclean_leader_elections") == ["unclean-0"]]

