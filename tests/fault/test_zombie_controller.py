"""A controller paused past its session timeout (SIGSTOP) loses its seat; when
it resumes (SIGCONT) none of its writes or requests take effect."""

from __future__ import annotations

import signal

import pytest

from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec
from tests.integration.controller_helpers import controller, create_topic, states, wait_for

pytestmark = pytest.mark.fault

SESSION_MS = 3000


def test_paused_controller_is_fenced_after_it_resumes(cluster_factory):
    cluster = cluster_factory(ClusterSpec(zookeeper_session_timeout_ms=SESSION_MS))
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        assignment = {p: ((1, 2, 3), (2, 3, 1), (3, 1, 2))[p % 3] for p in range(12)}
        create_topic(zk, "z", assignment)
        wait_for(lambda: all(states(zk, "z", 12).values()), 10, "partition states")
        zombie, epoch = controller(zk)
        cluster.signal(f"controller-{zombie}", signal.SIGSTOP)
        try:
            successor = 2 if zombie == 1 else 1
            wait_for(lambda: controller(zk) == (successor, epoch + 1), SESSION_MS / 1000 + 15, "a new controller")
            # While the zombie sleeps the cluster changes under the new controller.
            cluster.kill("broker-3")
            wait_for(lambda: all(3 not in s[0].isr for s in states(zk, "z", 12).values()), SESSION_MS / 1000 + 10,
                     "broker 3 to leave every ISR")
            before = states(zk, "z", 12)
        finally:
            cluster.signal(f"controller-{zombie}", signal.SIGCONT)
        # The zombie acts on what it remembers until it learns that its session is gone; once it
        # says so, whatever it tried has been fenced.
        wait_for(lambda: (log := cluster.log_path(f"controller-{zombie}").read_text())
                 and ("resigning controller seat" in log or "gives up its seat" in log),
                 SESSION_MS / 1000 + 15, f"controller {zombie} to say it gave up its seat")
        assert controller(zk) == (successor, epoch + 1)
        assert states(zk, "z", 12) == before, "the resumed controller changed partition state"
        assert all(rec.controller_epoch in (epoch, epoch + 1) for rec, _ in before.values())
    finally:
        zk.stop()
