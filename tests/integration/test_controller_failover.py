"""Controller behaviour with real processes, observed through ZooKeeper:
partition states for new topics, leader election when a broker dies, and a
standby taking over (also for a broker killed while no controller acted)."""

from __future__ import annotations

import pytest

from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec

from .controller_helpers import controller, create_topic, states, wait_for

pytestmark = pytest.mark.integration

SESSION_MS = 3000


@pytest.fixture
def cluster_and_zk(cluster_factory):
    cluster = cluster_factory(ClusterSpec(zookeeper_session_timeout_ms=SESSION_MS))
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    yield cluster, zk
    zk.stop()


def all_states(zk, topic, count):
    found = states(zk, topic, count)
    return found if all(found.values()) else None


def test_new_topic_gets_preferred_leaders_and_full_isrs(cluster_and_zk):
    _, zk = cluster_and_zk
    create_topic(zk, "orders", {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)})
    found = wait_for(lambda: all_states(zk, "orders", 3), 10, "partition states")
    for p, replicas in {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}.items():
        record, version = found[p]
        assert record.leader == replicas[0] and set(record.isr) == set(replicas)
        assert record.leader_epoch == 0 and version == 0


def test_killed_broker_loses_leadership_to_isr_members_in_one_step(cluster_and_zk):
    cluster, zk = cluster_and_zk
    assignment = {p: ((1, 2, 3), (2, 3, 1), (3, 1, 2))[p % 3] for p in range(30)}
    create_topic(zk, "events", assignment)
    wait_for(lambda: all_states(zk, "events", 30), 10, "partition states")
    cluster.kill("broker-1")

    def moved():
        found = all_states(zk, "events", 30)
        return found if found and all(1 not in rec.isr for rec, _ in found.values()) else None

    found = wait_for(moved, SESSION_MS / 1000 + 10, "broker 1 to leave every ISR")
    for p, (record, _) in found.items():
        replicas = assignment[p]
        assert record.leader != 1 and record.leader in record.isr
        expected = next(b for b in replicas if b != 1)  # first live ISR member in assignment order
        assert record.leader == expected, (p, record)
        assert record.leader_epoch == (1 if replicas[0] == 1 else 0)


def test_standby_takes_over_and_handles_a_broker_killed_in_the_gap(cluster_and_zk):
    cluster, zk = cluster_and_zk
    create_topic(zk, "t", {p: ((1, 2, 3), (2, 3, 1), (3, 1, 2))[p % 3] for p in range(9)})
    wait_for(lambda: all_states(zk, "t", 9), 10, "partition states")
    active, epoch = controller(zk)
    cluster.kill(f"controller-{active}")
    cluster.kill("broker-2")  # dies while no controller is active
    standby = 2 if active == 1 else 1
    wait_for(lambda: controller(zk) == (standby, epoch + 1), SESSION_MS / 1000 + 10, "the standby to take the seat")

    def handled():
        found = all_states(zk, "t", 9)
        return found if found and all(2 not in rec.isr and rec.leader != 2 for rec, _ in found.values()) else None

    found = wait_for(handled, SESSION_MS / 1000 + 10, "broker 2's partitions to move")
    assert all(rec.leader >= 0 for rec, _ in found.values())
    assert {rec.controller_epoch for rec, _ in found.values() if rec.leader_epoch > 0} == {epoch + 1}


def test_no_live_isr_member_means_offline_and_back_when_it_returns(cluster_and_zk):
    cluster, zk = cluster_and_zk
    create_topic(zk, "solo", {0: (3,)})
    wait_for(lambda: all_states(zk, "solo", 1), 10, "partition state")
    cluster.kill("broker-3")
    record = wait_for(lambda: (lambda s: s if s and s[0][0].leader == -1 else None)(all_states(zk, "solo", 1)),
                      SESSION_MS / 1000 + 10, "the partition to go offline")[0][0]
    assert record.isr == (3,)  # the last ISR member is kept, as Kafka does: no unclean election
    cluster.start("broker-3")
    cluster.wait_healthy(["broker-3"])
    record = wait_for(lambda: (lambda s: s if s and s[0][0].leader == 3 else None)(all_states(zk, "solo", 1)),
                      15, "the partition to come back")[0][0]
    assert record.leader_epoch == 2
