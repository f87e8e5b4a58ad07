"""The client library as a user meets it (issue 42), against a real cluster: keyed records land where
Kafka's partitioner puts them, the Consumer iterates, seeks and starts by timestamp, and a consumer
reading through a leader kill sees every record once."""

from __future__ import annotations

import time

import pytest

from replog.client import Consumer, ConsumerError, Producer, TopicPartition
from replog.client.partitioner import partition_for_key
from replog.devcluster import ClusterSpec

from .broker_helpers import wait_for_isr, wait_for_leader, zk_session
from .controller_helpers import create_topic

PARTITIONS = 6
DEADLINE_S = 60.0
T0_MS = 1_600_000_000_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("client-api"))
    yield factory(ClusterSpec(controllers=1, brokers=3, gateways=0))
    factory.teardown()


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def create(cluster, topic: str, partitions: int = PARTITIONS) -> None:
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {p: tuple((p + i) % 3 + 1 for i in range(3)) for p in range(partitions)},
                     {"min.insync.replicas": "2"})
        for p in range(partitions):
            wait_for_isr(cluster, zk, topic, {1, 2, 3}, DEADLINE_S, partition=p)


def test_a_keyed_record_lands_on_the_partition_kafkas_partitioner_picks(cluster):
    create(cluster, "keyed")
    keys = [b"21", b"foobar", b"abc", b"a-little-bit-long-string", b"user-%d" % 7, b"user-%d" % 8]
    with Producer(bootstrap(cluster), acks="all") as producer:
        handles = [producer.send("keyed", b"v", key=key) for key in keys]
        landed = [h.result(timeout=30).partition for h in handles]
    assert landed == [partition_for_key(key, PARTITIONS) for key in keys]
    assert landed[1] == 1357151166 % PARTITIONS  # toPositive(murmur2("foobar")), Kafka's UtilsTest value


def test_null_keys_fill_one_partition_at_a_time_and_callbacks_report_each_record(cluster):
    create(cluster, "sticky")
    answered = []
    with Producer(bootstrap(cluster), linger_ms=50) as producer:
        handles = [producer.send("sticky", b"r%d" % i) for i in range(100)]
        for handle in handles:
            handle.add_done_callback(lambda h: answered.append(h.result().offset))
        producer.flush(30)
        partitions = {h.result().partition for h in handles}
    assert len(partitions) < PARTITIONS  # sticky: the records did not spread one by one
    assert sorted(answered) == sorted(h.result().offset for h in handles) and len(answered) == 100


def test_the_consumer_iterates_seeks_and_starts_by_timestamp(cluster):
    create(cluster, "iterated", partitions=2)
    with Producer(bootstrap(cluster)) as producer:
        for i in range(200):
            producer.send("iterated", b"%03d" % i, partition=i % 2, timestamp_ms=T0_MS + i * 1000)
        producer.flush(30)
    with Consumer(bootstrap(cluster), "iterated", iteration_timeout_ms=3000) as consumer:
        read = [(r.partition, r.offset, r.value) for r in consumer]
    assert sorted(read) == sorted((i % 2, i // 2, b"%03d" % i) for i in range(200))
    assert [o for p, o, _ in read if p == 0] == list(range(100))  # in offset order per partition

    with Consumer(bootstrap(cluster), "iterated", partitions=[1], iteration_timeout_ms=3000) as consumer:
        first = next(iter(consumer))
        assert (first.partition, first.offset, consumer.position(1)) == (1, 0, 1)
        consumer.seek(1, 90)
        assert consumer.position(1) == 90
        assert [r.offset for r in consumer] == list(range(90, 100))
        assert consumer.position(1) == 100
        # record 151 (partition 1, offset 75) is the first of partition 1 stamped at or after T0 + 150 s
        assert consumer.offsets_for_times({1: T0_MS + 150_000}) == {1: 75}
        assert consumer.offsets_for_times({1: T0_MS + 10**9}) == {1: None}
        with pytest.raises(ConsumerError, match="not assigned"):
            consumer.seek(0, 3)
        consumer.assign([0, 1], start=98)
        assert consumer.assignment() == [TopicPartition("iterated", 0), TopicPartition("iterated", 1)] and consumer.position(1) == 100 and consumer.position(0) == 98
        assert sorted((r.partition, r.offset) for r in consumer) == [(0, 98), (0, 99)]

    with Consumer(bootstrap(cluster), "iterated", start_timestamp_ms=T0_MS + 150_000,
                  iteration_timeout_ms=3000) as consumer:
        values = sorted(r.value for r in consumer)
    assert values == [b"%03d" % i for i in range(150, 200)]


def test_a_consumer_reads_through_a_leader_kill_without_a_gap_or_a_duplicate(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=3, gateways=0, zookeeper_session_timeout_ms=3000))
    create(cluster, "through", partitions=2)
    records = 20_000
    with Producer(bootstrap(cluster)) as producer:
        for i in range(records):
            producer.send("through", b"%06d" % i, partition=i % 2)
        producer.flush(60)
    seen: list[tuple[int, int]] = []
    try:
        with Consumer(bootstrap(cluster), "through", fetch_max_bytes=64 * 1024, fetch_buffer_bytes_max=128 * 1024,
                      iteration_timeout_ms=int(DEADLINE_S * 1000)) as consumer:
            for record in consumer:
                seen.append((record.partition, record.offset))
                if len(seen) == 2_000:  # mid-read: the read-ahead holds little, the rest is still at the leaders
                    with zk_session(cluster) as zk:
                        leader = wait_for_leader(cluster, zk, "through", None, DEADLINE_S, partition=0).leader
                    cluster.kill(f"broker-{leader}")
                if len(seen) == records:
                    break
    finally:
        cluster.discard()
    assert len(seen) == records, f"read {len(seen)} of {records}"
    assert len(set(seen)) == records  # no duplicate
    for p in (0, 1):
        assert [o for q, o in seen if q == p] == list(range(records // 2))  # no gap, in order


def test_acks_accepts_all_and_refuses_nonsense(cluster):
    with pytest.raises(ValueError, match="acks"):
        Producer(bootstrap(cluster), acks="most")
    started = time.monotonic()
    with Producer(bootstrap(cluster), acks="all"):
        pass
    assert time.monotonic() - started < DEADLINE_S
