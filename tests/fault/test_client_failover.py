"""The client resumes by itself after a broker goes away (issue 36): no `flush()`, no new client.

- After a retry (its leader stopped, leadership moved), the producer goes on sending the
  partition's new records as they come, not only when a flush or a full batch pushes them.
- A consumer that saw a partition without a leader (its only replica's broker killed) reads
  it again once the broker is back, while it goes on reading the other partition.
"""

from __future__ import annotations

import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec

from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    start_cluster,
    create_topic,
    partition_state,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

SESSION_MS = 3000


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def test_producer_keeps_sending_a_partition_after_a_retry_without_a_flush(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, brokers=2, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "moved", {0: (1, 2)})
        wait_for_isr(cluster, zk, "moved", {1, 2}, 30)
        with Producer(bootstrap(cluster)) as producer:
            assert producer.send("moved", b"before", partition=0).result(timeout=20).offset == 0
            # A controlled shutdown moves leadership to broker 2; the producer still names broker 1,
            # so its next record fails there and is retried at broker 2.
            cluster.stop("broker-1")
            wait_for_leader(cluster, zk, "moved", 2, 30)
            assert producer.send("moved", b"retried", partition=0).result(timeout=20).offset == 1
            for i in range(20):
                future = producer.send("moved", b"after-%d" % i, partition=0)
                # One at a time, so none fills a batch: each must leave on its own linger.
                wait_for(future.done, 10, f"record {i} after the retry to be acknowledged")
                assert future.result().offset == 2 + i


def test_consumer_reads_again_a_partition_whose_broker_came_back(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, brokers=2, gateways=0, zookeeper_session_timeout_ms=SESSION_MS))
    with zk_session(cluster) as zk:
        create_topic(zk, "back", {0: (1,), 1: (2,)})
        wait_for_leader(cluster, zk, "back", 1, 30, partition=0)
        wait_for_leader(cluster, zk, "back", 2, 30, partition=1)
        with Producer(bootstrap(cluster)) as producer, Consumer(bootstrap(cluster), "back") as consumer:
            read: dict[int, list[bytes]] = {0: [], 1: []}
            write(producer, {0: range(0, 10), 1: range(0, 10)})
            read_until(consumer, read, {0: 10, 1: 10})

            cluster.kill("broker-2")
            wait_for(lambda: partition_state(zk, "back", 1).leader == -1, SESSION_MS / 1000 + 15,
                     "partition 1 to have no leader")
            write(producer, {0: range(10, 20)})
            read_until(consumer, read, {0: 20, 1: 10})
            # The consumer has seen partition 1 without a leader (the case that stayed unread).
            wait_for(lambda: poll_into(consumer, read) and consumer.metadata.partition("back", 1).leader == -1, 15,
                     "the consumer to see partition 1 without a leader")

            cluster.start("broker-2")
            cluster.wait_healthy(["broker-2"], 30)
            wait_for_leader(cluster, zk, "back", 2, 30, partition=1)
            write(producer, {0: range(20, 30), 1: range(10, 30)})
            read_until(consumer, read, {0: 30, 1: 30})
    assert read == {p: [b"%d-%d" % (p, i) for i in range(30)] for p in (0, 1)}


def write(producer: Producer, values: dict[int, range]) -> None:
    futures = [producer.send("back", b"%d-%d" % (p, i), partition=p) for p, ids in values.items() for i in ids]
    for future in futures:
        future.result(timeout=30)


def poll_into(consumer: Consumer, read: dict[int, list[bytes]]) -> bool:
    for record in consumer.poll(200):
        read[record.partition].append(record.value)
    return True


def read_until(consumer: Consumer, read: dict[int, list[bytes]], counts: dict[int, int], timeout_s: float = 30) -> None:
    def enough() -> bool:
        poll_into(consumer, read)
        return all(len(read[p]) >= n for p, n in counts.items())
    try:
        wait_for(enough, timeout_s, f"records {counts} by partition")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; read {({p: len(v) for p, v in read.items()})}") from None
