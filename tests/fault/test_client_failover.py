"""The client resumes by itself after a broker goes away (issue 36): no `flush()`, no new client.

- After a retry (its leader stopped, leadership moved), the producer goes on sending the
  partition's new records as they come, not only when a flush or a full batch pushes them.
- A consumer that saw a partition without a leader (its only replica's broker killed) reads
  it again once the broker is back, while it goes on reading the other partition.
- A leader killed or paused under load: the producer as shipped has every record acknowledged
  within the ZooKeeper session timeout (the time the cluster takes to notice) plus 2 s of its send.
"""

from __future__ import annotations

import signal
import threading
import time

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


class Load:
    """Sends one record per partition every `interval_s` from a thread; keeps each one's send and ack times."""

    def __init__(self, producer: Producer, topic: str, partitions: int, interval_s: float = 0.005) -> None:
        self.producer, self.topic, self.partitions, self.interval_s = producer, topic, partitions, interval_s
        self.records: list[tuple[int, float, object]] = []  # (partition, sent at, future)
        self.acked_at: dict[int, float] = {}  # index in records -> acknowledged at
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Load":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for p in range(self.partitions):
                index = len(self.records)
                future = self.producer.send(self.topic, b"r%d" % index, partition=p)
                self.records.append((p, time.monotonic(), future))
                future.add_done_callback(lambda f, index=index: self._done(index, f))

    def _done(self, index: int, future) -> None:
        with self._lock:
            if future.exception() is not None:
                self.errors.append(future.exception())
            else:
                self.acked_at[index] = time.monotonic()

    def acked(self) -> int:
        with self._lock:
            return len(self.acked_at)

    def answered(self) -> int:
        with self._lock:
            return len(self.acked_at) + len(self.errors)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def slowest_s(self, partition: int, now: float) -> float:
        """The longest a record of `partition` took from send to acknowledgement (till `now` if it has none)."""
        with self._lock:
            return max(self.acked_at.get(i, now) - sent for i, (p, sent, _) in enumerate(self.records)
                       if p == partition)


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_producer_as_shipped_resumes_within_the_session_timeout_after_its_leader_is_lost(start_cluster, fault):
    """kill -9 closes the leader's connections; SIGSTOP leaves them open and silent (a long GC pause, a
    frozen VM), and the producer's requests there unanswered, so it must leave them for the new leader."""
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=SESSION_MS))
    bound_s = SESSION_MS / 1000 + 2
    with zk_session(cluster) as zk:
        create_topic(zk, "lost", {0: (1, 2, 3), 1: (2, 3, 1)}, {"min.insync.replicas": "2"})
        wait_for_isr(cluster, zk, "lost", {1, 2, 3}, 30, partition=0)
        wait_for_isr(cluster, zk, "lost", {1, 2, 3}, 30, partition=1)
        producer = Producer(bootstrap(cluster))
        try:
            load = Load(producer, "lost", 2).start()
            try:
                wait_for(lambda: load.acked() > 400, 20, "acknowledgements before the fault")
                if fault == "kill":
                    cluster.kill("broker-1")
                else:
                    cluster.signal("broker-1", signal.SIGSTOP)
                lost_at = time.monotonic()
                wait_for_leader(cluster, zk, "lost", None, 30, partition=0)
                # Load on past the bound: a partition that stopped sending leaves records unacknowledged.
                wait_for(lambda: time.monotonic() > lost_at + bound_s + 2, bound_s + 10, "the load to run on")
            finally:
                load.stop()
            # No flush: what was sent is acknowledged on the producer's own schedule, or not in time.
            answer_by = time.monotonic() + bound_s
            wait_for(lambda: load.answered() == len(load.records) or time.monotonic() > answer_by, bound_s + 5,
                     "every record to be answered, or the bound to pass")
            slowest_s = {p: round(load.slowest_s(p, time.monotonic()), 2) for p in (0, 1)}
        finally:
            cluster.signal("broker-1", signal.SIGCONT)
            producer.close(timeout_s=30)
    assert not load.errors, load.errors[:3]
    assert max(slowest_s.values()) <= bound_s, f"longest from send to acknowledgement by partition: {slowest_s}"
    # What was left at the old leader went again, with its sequence: each record is in the log once.
    sent = {p: sorted(b"r%d" % i for i, (q, _, _) in enumerate(load.records) if q == p) for p in (0, 1)}
    read: dict[int, list[bytes]] = {0: [], 1: []}
    with Consumer(bootstrap(cluster), "lost") as consumer:
        read_until(consumer, read, {p: len(values) for p, values in sent.items()})
    for p in (0, 1):
        assert sorted(read[p]) == sent[p], (f"partition {p}: {len(sent[p])} records sent, {len(read[p])} read, "
                                            f"{len(set(read[p]))} of them distinct")
