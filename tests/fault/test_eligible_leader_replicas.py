"""Eligible leader replicas (KIP-966, issue 40): real processes, a partition whose ISR dies one by one.

A partition is replicated on brokers 1, 2 and 3 with min.insync.replicas=2, broker 1 leading. Broker 3
stops (a clean, controlled shutdown): the ISR is {1, 2}, still at min.insync.replicas, and acks=all
writes go on. Broker 2 stops too: the ISR falls below min.insync.replicas, and broker 2, which holds
every acknowledged record, becomes an eligible leader replica (ELR) instead of being forgotten; an acks=1
write to the lone leader is taken but not committed (the HW stays: strict min ISR). Then
the leader, broker 1, is killed with SIGKILL (an unclean shutdown). Nothing leads.

- Broker 3, in neither the ISR nor the ELR, comes back alone: the partition stays offline (no
  unclean election is allowed), and `replog topics describe` shows it unavailable with ELR 2.
- Broker 2 comes back: it leads, cleanly, and every acknowledged record is there.
- Broker 1 comes back from its unclean shutdown: it is no longer eligible until it has caught up,
  and joins the ISR again by fetching from broker 2.

A second story asks for an explicit unclean election instead of waiting for broker 2: broker 3 leads,
the ELR is emptied and describe flags the unclean leader.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2
from tests.fault.test_power_loss import committed_values, registration
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    describe,
    partition_state,
    produce_raw,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BROKERS = (1, 2, 3)


def spec() -> ClusterSpec:
    """Built per test: the spec takes the session's CA from the environment, which the CLI trusts."""
    return ClusterSpec(controllers=1, gateways=1, zookeeper_session_timeout_ms=4000)


def replog(cluster, *args: str) -> str:
    """The `replog` command line as an operator runs it."""
    command = [str(Path(sys.executable).parent / "replog"), "--gateway", cluster.gateway_address, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def described_partition(cluster, topic: str) -> dict:
    (found,) = json.loads(replog(cluster, "topics", "describe", topic, "-o", "json"))["topics"]
    return found["partitions"][0]


def produce_acknowledged(cluster, leader: int, topic: str, prefix: str, count: int) -> list[bytes]:
    acknowledged = []
    for index in range(count):
        value = f"{prefix}-{index}".encode()
        answer = produce_raw(cluster, leader, topic, batch_of([value]), acks=-1)
        assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
        acknowledged.append(value)
    return acknowledged


def kill_the_isr_one_by_one(cluster, zk, topic: str) -> list[bytes]:
    """Brokers 3 and 2 stop cleanly, then the leader 1 is killed; returns the acknowledged records."""
    create_topic(zk, topic, {0: BROKERS}, {"min.insync.replicas": "2"})
    wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
    wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
    acknowledged = produce_acknowledged(cluster, 1, topic, "three", 5)

    cluster.stop("broker-3")
    wait_for_isr(cluster, zk, topic, {1, 2}, 30)
    assert partition_state(zk, topic).elr == ()  # at min.insync.replicas, broker 3 may fall behind
    acknowledged += produce_acknowledged(cluster, 1, topic, "two", 5)
    wait_caught_up(cluster, (1, 2), topic, len(acknowledged), 30)

    cluster.stop("broker-2")
    state = wait_for_isr(cluster, zk, topic, {1}, 30)
    assert state.elr == (2,), state
    refused = produce_raw(cluster, 1, topic, batch_of([b"refused"]), acks=-1)
    assert refused.error_code == common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS, refused
    # Strict min ISR: an acks=1 write is taken, but the HW stays where it was, so no reader sees a
    # record that the ELR member, broker 2, does not hold.
    taken = produce_raw(cluster, 1, topic, batch_of([b"leader-only"]), acks=1)
    assert taken.error_code == common_pb2.ERROR_CODE_NONE, taken
    assert committed_values(cluster, zk, topic) == acknowledged, "a record on the lone leader became visible"

    cluster.kill("broker-1")
    state = wait_for(lambda: (s := partition_state(zk, topic)) and s.leader == -1 and s, 30, "the partition offline")
    assert (state.isr, state.elr) == ((1,), (2,)), state
    return acknowledged


def start_ineligible_broker_3(cluster, zk, topic: str) -> None:
    """Broker 3 comes back alone; returns once it has heard from the controller about the partition."""
    epoch = partition_state(zk, topic).leader_epoch
    cluster.start("broker-3")
    cluster.wait_healthy(["broker-3"], 60)
    wait_for(lambda: (d := describe(cluster, 3, topic)) is not None and d.leader_epoch == epoch, 30,
             "broker 3 to hold the partition as the controller left it")


def test_an_elr_member_leads_cleanly_after_the_whole_isr_died_and_nothing_acknowledged_is_lost(cluster_factory):
    cluster = cluster_factory(spec())
    topic = "elr"
    try:
        with zk_session(cluster) as zk:
            acknowledged = kill_the_isr_one_by_one(cluster, zk, topic)

            start_ineligible_broker_3(cluster, zk, topic)
            state = partition_state(zk, topic)
            assert (state.leader, state.elr) == (-1, (2,)), "a replica outside ISR and ELR was elected"
            shown = described_partition(cluster, topic)
            assert shown["leader"] == -1 and shown["unavailable"] and shown["elr"] == [2], shown
            assert "ELR" in replog(cluster, "topics", "describe", topic)

            cluster.start("broker-2")
            state = wait_for_leader(cluster, zk, topic, 2, 60)
            assert state.unclean_leader_epoch == -1, "the election from the ELR was recorded as unclean"
            assert committed_values(cluster, zk, topic) == acknowledged, "an acknowledged record was lost"
            assert not described_partition(cluster, topic)["unclean_leader"]

            cluster.start("broker-1")
            cluster.wait_healthy(["broker-1"], 60)
            assert registration(zk, 1).unclean_start
            wait_for(lambda: 1 not in partition_state(zk, topic).elr, 30, "broker 1 to leave the ELR")
            wait_for_isr(cluster, zk, topic, set(BROKERS), 60)  # it fetched from broker 2 and caught up
            assert partition_state(zk, topic).elr == ()
            assert committed_values(cluster, zk, topic) == acknowledged
    finally:
        cluster.discard()


def test_an_explicit_unclean_election_brings_the_partition_back_without_the_elr_and_says_so(cluster_factory):
    cluster = cluster_factory(spec())
    topic = "elr-unclean"
    try:
        with zk_session(cluster) as zk:
            kill_the_isr_one_by_one(cluster, zk, topic)
            start_ineligible_broker_3(cluster, zk, topic)
            assert partition_state(zk, topic).leader == -1

            replog(cluster, "elect-leaders", "--unclean", "--topic", topic, "--partition", "0")
            state = wait_for_leader(cluster, zk, topic, 3, 60)
            assert state.elr == () and state.unclean_leader_epoch == state.leader_epoch, state
            shown = described_partition(cluster, topic)
            assert shown["unclean_leader"] and shown["elr"] == [], shown
    finally:
        cluster.discard()
