"""A consumer whose position was truncated away detects it (KIP-320's consumer half, issue 59).

Broker 1 leads alone (its follower killed) and acknowledges records 100-199 that no other replica
has; two consumers read all 200. Broker 1 is killed and broker 2 elected uncleanly; new records make
its log longer than 200, so a consumer that fetched on from its position would silently skip the new
history at offsets 100-199. Instead each notices, when metadata names the new leader, that the leader
epoch of its last batch ends at 100 in the new leader's log: the one with on_truncation="raise" raises
TruncationError naming offset 100, the one with "reset" returns the new history from offset 100."""

from __future__ import annotations

import pytest

from replog.client import Consumer, Producer, TopicPartition, TruncationError
from replog.devcluster import ClusterSpec

from .broker_helpers import create_topic, wait_for_isr, wait_for_leader, zk_session

pytestmark = pytest.mark.integration

TOPIC = "diverging"
TP = TopicPartition(TOPIC, 0)
DEADLINE_S = 60


def produce(bootstrap: list[str], values: list[bytes]) -> None:
    with Producer(bootstrap) as producer:
        handles = [producer.send(TOPIC, v, partition=0) for v in values]
        producer.flush(DEADLINE_S)
    assert all(h.exception() is None for h in handles), [h.exception() for h in handles if h.exception()][:1]


def read(consumer: Consumer, count: int) -> list[tuple[int, bytes]]:
    out = []
    for record in consumer:
        out.append((record.offset, record.value))
        if len(out) == count:
            break
    return out


def test_a_consumer_notices_records_it_read_were_truncated_by_an_unclean_election(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=2, gateways=0, zookeeper_session_timeout_ms=3000,
                                          extra_args={"broker": ["--replica-lag-time-max-ms", "2000"]}))
    try:
        with zk_session(cluster) as zk:
            create_topic(zk, TOPIC, {0: (1, 2)}, {"unclean.leader.election.enable": "true",
                                                 "min.insync.replicas": "1"})
            wait_for_isr(cluster, zk, TOPIC, {1, 2}, DEADLINE_S)
            bootstrap = [p.address for p in cluster.of_role("broker")]
            produce(bootstrap, [b"old-%d" % i for i in range(100)])
            cluster.kill("broker-2")
            wait_for_isr(cluster, zk, TOPIC, {1}, DEADLINE_S)
            produce(bootstrap, [b"lone-%d" % i for i in range(100)])  # acknowledged by broker 1 alone

            settings = dict(iteration_timeout_ms=DEADLINE_S * 1000, max_wait_ms=200, retry_backoff_ms=100,
                            metadata_max_age_ms=1000)
            raising = Consumer(bootstrap, TOPIC, on_truncation="raise", **settings)
            resetting = Consumer(bootstrap, TOPIC, on_truncation="reset", **settings)
            try:
                for consumer in (raising, resetting):
                    assert read(consumer, 200)[-1] == (199, b"lone-99")
                cluster.kill("broker-1")
                cluster.start("broker-2")
                wait_for_leader(cluster, zk, TOPIC, 2, DEADLINE_S)  # unclean: broker 2 has records 0-99 only
                produce(bootstrap, [b"new-%d" % i for i in range(150)])  # its log now runs past 200

                with pytest.raises(TruncationError) as raised:
                    read(raising, 1)
                assert raised.value.divergent_offsets == {TP: 100} and "no longer in the log" in str(raised.value)
                raising.seek(TP, 100)
                assert read(raising, 1) == [(100, b"new-0")]

                assert read(resetting, 3) == [(100, b"new-0"), (101, b"new-1"), (102, b"new-2")]
            finally:
                raising.close()
                resetting.close()
    finally:
        cluster.discard()
