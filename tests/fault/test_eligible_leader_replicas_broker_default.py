"""Eligible leader replicas of a topic without its own min.insync.replicas: the brokers' default (issue 40).

test_eligible_leader_replicas.py's story, but the topic has no config of its own and every broker runs
with `--min-insync-replicas 2`. Each broker registers that default in /brokers/ids/<id>; for such a
topic the controller takes the lowest of the live brokers', 2, the value the leader enforces. So when
brokers 3 and 2 stop, broker 2 joins the ELR; the leader, broker 1, refuses acks=all; once broker 1 is
killed as well the ELR stays, although no broker is left to say the default; and broker 2, started
again, leads cleanly with every acknowledged record.
"""

from __future__ import annotations

import pytest

from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2
from tests.fault.test_eligible_leader_replicas import produce_acknowledged
from tests.fault.test_power_loss import committed_values, registration
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
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


def test_a_topic_on_the_brokers_default_keeps_its_elr_and_an_elr_member_leads_cleanly(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=4000,
                                          extra_args={"broker": ["--min-insync-replicas", "2"]}))
    topic = "elr-default"
    try:
        with zk_session(cluster) as zk:
            assert [registration(zk, b).min_insync_replicas_default for b in BROKERS] == [2, 2, 2]
            create_topic(zk, topic, {0: BROKERS})  # no min.insync.replicas of its own
            wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
            wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
            acknowledged = produce_acknowledged(cluster, 1, topic, "three", 3)

            cluster.stop("broker-3")
            wait_for_isr(cluster, zk, topic, {1, 2}, 30)
            assert partition_state(zk, topic).elr == ()  # at the brokers' min.insync.replicas
            acknowledged += produce_acknowledged(cluster, 1, topic, "two", 3)
            wait_caught_up(cluster, (1, 2), topic, len(acknowledged), 30)

            cluster.stop("broker-2")
            state = wait_for_isr(cluster, zk, topic, {1}, 30)
            assert state.elr == (2,), "the controller did not take the brokers' default"
            refused = produce_raw(cluster, 1, topic, batch_of([b"refused"]), acks=-1)
            assert refused.error_code == common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS, refused

            cluster.kill("broker-1")
            state = wait_for(lambda: (s := partition_state(zk, topic)) and s.leader == -1 and s, 30,
                             "the partition offline")
            assert (state.isr, state.elr) == ((1,), (2,)), "the ELR went with the last live broker"

            cluster.start("broker-2")
            state = wait_for_leader(cluster, zk, topic, 2, 60)
            assert state.unclean_leader_epoch == -1, "the election from the ELR was recorded as unclean"
            assert committed_values(cluster, zk, topic) == acknowledged, "an acknowledged record was lost"
    finally:
        cluster.discard()
