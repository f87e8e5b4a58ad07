"""Strict min ISR (KIP-966, issue 40) with real processes: a record on fewer replicas than
min.insync.replicas is never shown to a reader, and a change of the config reaches the running leader.

A partition on brokers 1, 2 and 3 with min.insync.replicas=2, broker 1 leading. Brokers 2 and 3 stop:
the ISR is {1}. An acks=1 write is taken but not committed: a consumer reads only what came before.
The operator lowers min.insync.replicas to 1 (`replog topics alter`): the leader commits it at once,
with no further write. Raised back to 2, the next acks=1 write waits again, until broker 2 is back in
the ISR.
"""

from __future__ import annotations

import pytest

from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2
from tests.fault.test_eligible_leader_replicas import produce_acknowledged, replog
from tests.fault.test_power_loss import committed_values
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    produce_raw,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BROKERS = (1, 2, 3)


def write_leader_only(cluster, topic: str, value: bytes) -> None:
    taken = produce_raw(cluster, 1, topic, batch_of([value]), acks=1)
    assert taken.error_code == common_pb2.ERROR_CODE_NONE, taken


def held_write(cluster, zk, topic: str, committed: list[bytes]) -> bytes | None:
    """An acks=1 write; its value when it stays unseen, else None (committed at once: the leader had not
    heard of the raised config yet; `committed` then grows by it)."""
    value = f"probe-{len(committed)}".encode()
    write_leader_only(cluster, topic, value)
    seen = committed_values(cluster, zk, topic)
    if seen == committed + [value]:
        committed.append(value)
        return None
    assert seen == committed, seen
    return value


def test_a_record_below_min_insync_replicas_stays_unseen_until_the_isr_or_the_config_allows_it(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, gateways=1, zookeeper_session_timeout_ms=4000))
    topic = "strict"
    try:
        with zk_session(cluster) as zk:
            create_topic(zk, topic, {0: BROKERS}, {"min.insync.replicas": "2"})
            wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
            wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
            committed = produce_acknowledged(cluster, 1, topic, "replicated", 3)

            cluster.stop("broker-3")
            cluster.stop("broker-2")
            wait_for_isr(cluster, zk, topic, {1}, 30)
            write_leader_only(cluster, topic, b"lowered")
            assert committed_values(cluster, zk, topic) == committed, "a record on the leader alone became visible"

            replog(cluster, "topics", "alter", topic, "--config", "min.insync.replicas=1")
            committed.append(b"lowered")
            wait_for(lambda: committed_values(cluster, zk, topic) == committed, 30,
                     "the lowered min.insync.replicas to commit the leader's record without another write")

            replog(cluster, "topics", "alter", topic, "--config", "min.insync.replicas=2")
            held = wait_for(lambda: held_write(cluster, zk, topic, committed), 30,
                            "the raised min.insync.replicas to reach the leader: an acks=1 write stays unseen")

            cluster.start("broker-2")
            wait_for_isr(cluster, zk, topic, {1, 2}, 60)
            committed.append(held)
            wait_for(lambda: committed_values(cluster, zk, topic) == committed, 30,
                     "the record to be committed once broker 2 is back in the ISR")
    finally:
        cluster.discard()
