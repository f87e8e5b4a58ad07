"""Controller behaviour with real processes, observed through ZooKeeper:
partition states for new topics, leader election when a broker dies, and a
standby taking over (also for a broker killed while no controller acted)."""

from __future__ import annotations

import pytest

from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2

from .broker_helpers import batch_of, log_stub, produce_raw
from .controller_helpers import controller, create_topic, states, wait_for

pytestmark = pytest.mark.integration

SESSION_MS = 3000


@pytest.fixture
def cluster_and_zk(cluster_factory):
    cluster = cluster_factory(ClusterSpec(zookeeper_session_timeout_ms=SESSION_MS))
    zk = ZkClient(cluster.zookeeper_endpoint)
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


def metadata(cluster, broker_id: int, topic: str) -> log_pb2.MetadataResponse:
    return log_stub(cluster, broker_id).Metadata(log_pb2.MetadataRequest(topics=[topic]), timeout=5)


def log_lines_since(cluster, name: str, start: int) -> str:
    return cluster.log_path(name).read_text(errors="replace")[start:]


def test_a_new_controller_confirms_brokers_that_hold_its_state_and_resends_the_rest(cluster_and_zk):
    cluster, zk = cluster_and_zk
    rotations = ((1, 2, 3), (2, 3, 1), (3, 1, 2))
    create_topic(zk, "kept", {p: rotations[p % 3] for p in range(9)})
    wait_for(lambda: all_states(zk, "kept", 9), 10, "partition states")
    # Broker 3 leaves the ISRs and comes back through AlterPartition: the followers of those
    # partitions now hold older partition epochs than ZooKeeper (only metadata tells them).
    cluster.kill("broker-3")
    wait_for(lambda: (f := all_states(zk, "kept", 9)) and all(3 not in r.isr for r, _ in f.values()),
             SESSION_MS / 1000 + 10, "broker 3 to leave every ISR")
    cluster.start("broker-3")
    wait_for(lambda: (f := all_states(zk, "kept", 9)) and all(len(r.isr) == 3 for r, _ in f.values()),
             30, "broker 3 back in every ISR")
    wait_for(lambda: all(len(p.isr) == 3 for b in (1, 2, 3) for p in metadata(cluster, b, "kept").topics[0].partitions),
             10, "every broker's metadata to have the full ISRs")
    active, epoch = controller(zk)
    standby = 2 if active == 1 else 1
    starts = {b: cluster.log_path(f"broker-{b}").stat().st_size for b in (1, 2, 3)}

    # Nothing changes while no controller acts: every broker confirms, none is sent the INIT.
    cluster.kill(f"controller-{active}")
    wait_for(lambda: controller(zk) == (standby, epoch + 1), SESSION_MS / 1000 + 10, "the standby to take the seat")
    for b in (1, 2, 3):
        lines = wait_for(lambda b=b: (t := log_lines_since(cluster, f"broker-{b}", starts[b]))
                         and "UpdateMetadata confirm" in t and t, 15, f"broker {b} to confirm")
        assert "LeaderAndIsr confirm: 9 replica(s) match" in lines, lines
        assert "UpdateMetadata confirm: 9 partition(s) match" in lines, lines
        assert ", init)" not in lines, lines
        assert metadata(cluster, b, "kept").controller_id == standby
    answer = produce_raw(cluster, 1, "kept", batch_of([b"after the failover"]), acks=-1, partition=0)
    assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer

    # Broker 3 dies in the next gap: the leaders it had move, so brokers 1 and 2 no longer hold
    # the new controller's state and get the full INIT; clients see the new leaders.
    starts = {b: cluster.log_path(f"broker-{b}").stat().st_size for b in (1, 2)}
    cluster.kill(f"controller-{standby}")
    cluster.kill("broker-3")
    # The gap: nobody holds the seat until broker 3's registration is gone too, so no controller acts on its
    # death before the restarted one loads. (Started at once, that one could load while broker 3's session
    # still lived, find brokers 1 and 2 matching, and move the leaders later by plain LeaderAndIsr.)
    wait_for(lambda: zk.get(schema.broker_path(3)) is None and controller(zk)[0] == -1, SESSION_MS / 1000 + 10,
             "broker 3's registration and the seat to be gone")
    cluster.start(f"controller-{active}")
    wait_for(lambda: controller(zk) == (active, epoch + 2), SESSION_MS / 1000 + 20,
             "the restarted one to take the seat")
    for b in (1, 2):
        lines = wait_for(lambda b=b: (t := log_lines_since(cluster, f"broker-{b}", starts[b]))
                         and "UpdateMetadata confirm" in t and ", init)" in t and t, 15, f"broker {b}'s full INIT")
        assert "LeaderAndIsr confirm: 9 replica(s) do not match" in lines, lines
        assert "UpdateMetadata confirm: 9 partition(s) do not match" in lines, lines
        leaders = wait_for(lambda b=b: (ps := metadata(cluster, b, "kept").topics[0].partitions)
                           and all(x.leader in (1, 2) for x in ps) and ps, 10, "leaders off broker 3")
        assert {x.leader for x in leaders} == {1, 2}
    answer = produce_raw(cluster, 1, "kept", batch_of([b"after the second failover"]), acks=-1, partition=0)
    assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer


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


def test_a_broker_a_request_did_not_reach_in_time_gets_its_state_again(cluster_factory):
    import signal

    cluster = cluster_factory(ClusterSpec(zookeeper_session_timeout_ms=15000))
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        create_topic(zk, "before", {0: (1, 2, 3)})
        wait_for(lambda: all_states(zk, "before", 1), 10, "partition state")
        # The controller has reached broker 3 (its connection is up) before the freeze: frozen earlier, broker 3
        # would never finish the connection and the requests would fail as UNAVAILABLE, not time out in transit.
        wait_for(lambda: (t := metadata(cluster, 3, "before").topics) and t[0].partitions, 20,
                 "broker 3's metadata to hold the first topic")
        # Broker 3 freezes (a GC pause, an overloaded host) but stays registered: the
        # controller's requests for a new topic time out (deadline 3 s) and it resyncs broker 3.
        confirms_before = cluster.tail("broker-3", 10_000).count("LeaderAndIsr confirm")
        active, _ = controller(zk)
        cluster.signal("broker-3", signal.SIGSTOP)
        try:
            create_topic(zk, "during", {0: (1, 2, 3)})
            wait_for(lambda: "to broker 3 failed: DEADLINE_EXCEEDED" in cluster.tail(f"controller-{active}", 400),
                     20, "the controller's request to the frozen broker 3 to time out")
        finally:
            cluster.signal("broker-3", signal.SIGCONT)
        wait_for(lambda: cluster.tail("broker-3", 10_000).count("LeaderAndIsr confirm") > confirms_before,
                 20, "the controller to resync broker 3")
        partitions = wait_for(lambda: metadata(cluster, 3, "during").topics[0].partitions, 10,
                              "broker 3's metadata to hold the new topic")
        assert [p.leader for p in partitions] == [1] and sorted(partitions[0].isr) == [1, 2, 3]
    finally:
        zk.stop()
