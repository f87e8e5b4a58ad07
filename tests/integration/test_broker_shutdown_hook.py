"""`replog-broker-shutdown` (the Kubernetes preStop hook) moves a running broker's leadership away before
it is stopped, with the broker's own settings and identity, and leaves the broker running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replog.devcluster import ClusterSpec
from tests.integration.broker_helpers import wait_for_leader, zk_session
from tests.integration.controller_helpers import create_topic, wait_for

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def test_the_hook_moves_leadership_off_a_running_broker(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=2, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "moved", {0: (1, 2), 1: (1, 2)}, {"min.insync.replicas": "1"})
        for partition in (0, 1):
            wait_for_leader(cluster, zk, "moved", 1, 60, partition, followers=(2,))
        broker = cluster.processes["broker-1"]
        arguments = broker.command[broker.command.index(str(BIN / "replog-broker")) + 1:]
        done = subprocess.run([str(BIN / "replog-broker-shutdown"), "--", *arguments], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "controlled shutdown done" in done.stdout + done.stderr
        for partition in (0, 1):
            wait_for_leader(cluster, zk, "moved", 2, 5, partition)
        assert cluster.is_running("broker-1")


def test_a_broker_that_is_not_registered_has_nothing_to_move(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=0))
    broker = cluster.processes["broker-1"]
    arguments = broker.command[broker.command.index(str(BIN / "replog-broker")) + 1:]
    cluster.stop("broker-1")
    with zk_session(cluster) as zk:
        wait_for(lambda: not zk.kazoo.exists("/brokers/ids/1"), 30, "broker 1's registration to go")
    done = subprocess.run([str(BIN / "replog-broker-shutdown"), "--", *arguments], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "nothing to move" in done.stdout, done.stdout + done.stderr
