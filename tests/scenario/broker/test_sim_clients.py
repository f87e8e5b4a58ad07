"""The simulation's clients (sim_producer.py, sim_consumer.py) as stories: the client library's producer
over the simulated cluster resends what it never heard about under the same sequence, keeps several
batches in flight, and follows a new leader; the consumer reads committed records only."""

from __future__ import annotations

import random

import pytest

from tests.scenario.broker import sim_history
from tests.scenario.broker.sim_consumer import SimConsumer
from tests.scenario.broker.sim_network import CLIENT
from tests.scenario.broker.sim_producer import FROM_CONTROLLER, ClientConfig, SimClient
from tests.scenario.broker.sim_schedule import new_cluster
from tests.unit.broker.core.fake_log import FakeLog

CONFIG = ClientConfig(max_in_flight=5, delivery_timeout_s=120.0, metadata_max_age_s=300.0)


def started_cluster(seed: int = 1):
    cluster = new_cluster(seed, random.Random(seed))
    cluster.start()
    return cluster


def replicate(cluster, rounds: int = 4) -> None:
    """Followers fetch until the leader's HW covers its log (no faults are on)."""
    for _ in range(rounds):
        for follower in (1, 2, 3):
            cluster.fetch(follower)
        cluster.drain_network()


def delivered(count: int):
    """A started cluster and a client whose first `count` records are sent, replicated and answered."""
    cluster = started_cluster()
    client = SimClient(cluster, 42, CONFIG)
    client.send(count)
    client.turn(FROM_CONTROLLER)
    replicate(cluster)
    client.turn(FROM_CONTROLLER)
    return cluster, client


def test_several_batches_in_flight_are_delivered_in_sequence_order():
    cluster = started_cluster()
    client = SimClient(cluster, 42, CONFIG)
    client.send(4)
    client.turn(FROM_CONTROLLER)
    streams = list(client.sender._streams.values())
    assert len(streams) == 1 and len(streams[0].pending) == 4, "four requests in flight at once"
    replicate(cluster)
    client.turn(FROM_CONTROLLER)
    delivered = cluster.delivered
    assert [d.sequence for d in delivered] == [0, 1, 2, 3]
    assert [d.offset for d in delivered] == sorted(d.offset for d in delivered)
    cluster.check_invariants()


def test_a_lost_answer_is_resent_under_the_same_sequence_and_answered_with_the_first_offset():
    cluster = started_cluster()
    client = SimClient(cluster, 42, CONFIG)
    client.send(1)
    client.turn(FROM_CONTROLLER)
    leader = cluster.controller.leader
    cluster.network.cut(leader, CLIENT, both_ways=False)  # the answer will be lost on its way
    replicate(cluster)
    (first,) = [r for r in cluster.committed.values() if r.producer_id == 42]
    client.turn(FROM_CONTROLLER)
    assert not cluster.delivered, "nothing heard"
    cluster.network.heal()
    cluster.tick(11_000)  # past the request timeout and the sender's grace: it gives the stream up
    client.turn(FROM_CONTROLLER)  # ... and the batch waits out its retry backoff
    cluster.tick(200)
    client.turn(FROM_CONTROLLER)  # resent
    cluster.drain_network()
    client.turn(FROM_CONTROLLER)
    (delivery,) = cluster.delivered
    assert (delivery.offset, delivery.sequence) == (first.offset, 0), "the leader's duplicate answer"
    assert [r.payload for r in cluster.committed.values()].count(first.payload) == 1
    cluster.check_invariants()


def test_a_batch_refused_by_a_deposed_leader_goes_to_the_new_one():
    cluster, client = delivered(1)
    old_leader = cluster.controller.leader
    cluster.kill(old_leader)
    for _ in range(40):  # the session expires and the controller elects another leader
        cluster.tick(500)
        cluster.deliver_all()
    assert cluster.controller.leader not in (old_leader, -1)
    client.send(1)
    for _ in range(6):
        client.turn(FROM_CONTROLLER)
        cluster.tick(200)
        replicate(cluster)
    client.turn(FROM_CONTROLLER)
    assert [d.sequence for d in cluster.delivered] == [0, 1]
    assert client.metadata.leader[0] == str(cluster.controller.leader)
    cluster.check_invariants()


def test_the_consumer_reads_committed_records_from_the_leader():
    cluster = started_cluster()
    client = SimClient(cluster, 42, CONFIG)
    client.send(3)
    client.turn(FROM_CONTROLLER)
    consumer = SimConsumer()
    consumer.consume(cluster, FROM_CONTROLLER)
    assert consumer.read == [], "nothing committed yet: the leader exposes nothing above its HW"
    replicate(cluster)
    for _ in range(3):
        consumer.consume(cluster, FROM_CONTROLLER)
    assert [r.payload for r in consumer.read] == [r.payload for r in cluster.committed.values()]
    consumer.check_against(cluster.leader().log)


def test_the_fault_matrix_checker_judges_what_the_clients_saw():
    cluster, _ = delivered(3)
    consumer = SimConsumer()
    consumer.consume(cluster, FROM_CONTROLLER)
    leader_log = cluster.leader().log
    assert len(cluster.delivered) == 3 and consumer.read
    sim_history.judge(cluster, consumer, leader_log)  # the converged log holds what was told and read

    lost = FakeLog()  # a log that lost the last delivered record
    lost.append_as_follower(leader_log.records_between(0, leader_log.log_end_offset - 1), fsync=True)
    with pytest.raises(AssertionError, match="the history checker: lost in orders-0"):
        sim_history.judge(cluster, consumer, lost)


def test_two_plain_sends_that_drew_the_same_payload_are_two_records_to_the_checker():
    cluster = started_cluster()
    leader = cluster.controller.leader
    first, second = cluster.produce("x5", broker_id=leader), cluster.produce("x5", broker_id=leader)
    replicate(cluster)
    assert first.ok and second.ok and first.base_offset != second.base_offset
    sim_history.judge(cluster, SimConsumer(), cluster.leader().log)
