"""A consumer reading while a partition's leader is lost keeps reading it at the new leader, soon.

A leader is killed (kill -9: its connections close) or paused (SIGSTOP: its connections stay open
and silent, as in a long GC pause). A consumer reads both partitions all along, with the consumer as
shipped. Every acknowledged record is read exactly once, in offset order, and a record acknowledged
after the fault is read within the ZooKeeper session timeout (the time the cluster takes to notice)
plus 2 s of its acknowledgement: the consumer neither forgets the partition nor waits out a dead
leader's connection, and the partition led elsewhere is not held up by it.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec
from tests.integration.broker_helpers import (
    create_topic,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

SESSION_MS = 3000
TOPIC = "moving"
PARTITIONS = (0, 1)


class Reader:
    """Polls from a thread; keeps when each value was read and at which offset."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.read: dict[int, list[tuple[int, bytes, float]]] = {p: [] for p in PARTITIONS}
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Reader":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                records = self.consumer.poll(200)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(exc)
                return
            now = time.monotonic()
            for record in records:
                self.read[record.partition].append((record.offset, record.value, now))

    def count(self) -> int:
        return sum(len(values) for values in self.read.values())

    def has_read(self, values: set[bytes], partition: int) -> bool:
        return values <= {value for _, value, _ in list(self.read[partition])}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


class Writer:
    """Sends one record per partition every `interval_s`; keeps each acknowledged value's time and offset."""

    def __init__(self, producer: Producer, interval_s: float = 0.01) -> None:
        self.producer, self.interval_s = producer, interval_s
        self.acked: dict[int, dict[bytes, tuple[int, float]]] = {p: {} for p in PARTITIONS}
        self.sent = 0
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Writer":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for p in PARTITIONS:
                value = b"%d-%d" % (p, self.sent)
                self.sent += 1
                future = self.producer.send(TOPIC, value, partition=p)
                future.add_done_callback(lambda f, p=p, value=value: self._done(p, value, f))

    def _done(self, partition: int, value: bytes, future) -> None:
        with self._lock:
            if future.exception() is not None:
                self.errors.append(future.exception())
            else:
                self.acked[partition][value] = (future.result().offset, time.monotonic())

    def acked_values(self, partition: int) -> set[bytes]:
        with self._lock:
            return set(self.acked[partition])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_consumer_follows_a_lost_leader_to_the_new_one_within_the_session_timeout(cluster_factory, fault):
    cluster = cluster_factory(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=SESSION_MS))
    bound_s = SESSION_MS / 1000 + 2
    bootstrap = [p.address for p in cluster.of_role("broker")]
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1, 2, 3), 1: (2, 3, 1)}, {"min.insync.replicas": "2"})
        for p in PARTITIONS:
            wait_for_isr(cluster, zk, TOPIC, {1, 2, 3}, 30, partition=p)
        producer = Producer(bootstrap)
        consumer = Consumer(bootstrap, TOPIC)
        writer, reader = Writer(producer), Reader(consumer)
        try:
            writer.start()
            reader.start()
            wait_for(lambda: reader.count() > 200, 30, "records read before the fault")
            if fault == "kill":
                cluster.kill("broker-1")
            else:
                cluster.signal("broker-1", signal.SIGSTOP)
            fault_at = time.monotonic()
            wait_for_leader(cluster, zk, TOPIC, None, 30, partition=0)
            wait_for(lambda: time.monotonic() > fault_at + bound_s + 3, bound_s + 10, "the load to run on")
            writer.stop()
            producer.flush(timeout_s=60)
            wait_for(lambda: all(reader.has_read(writer.acked_values(p), p) for p in PARTITIONS), 60,
                     "every acknowledged record to be read")
        finally:
            writer.stop()
            reader.stop()
            cluster.signal("broker-1", signal.SIGCONT)
            producer.close(timeout_s=30)
            consumer.close()
            cluster.discard()
    assert not writer.errors and not reader.errors, (writer.errors[:3], reader.errors[:3])
    slowest_s = {}
    for p in PARTITIONS:
        read = reader.read[p]
        assert [offset for offset, _, _ in read] == list(range(read[0][0], read[0][0] + len(read))), "in order"
        assert len({value for _, value, _ in read}) == len(read), "each once"
        by_value = {value: (offset, at) for offset, value, at in read}
        assert {v: o for v, (o, _) in writer.acked[p].items()} == {v: by_value[v][0] for v in writer.acked[p]}
        late = [by_value[v][1] - acked_at for v, (_, acked_at) in writer.acked[p].items() if acked_at > fault_at]
        assert late, f"partition {p}: nothing acknowledged after the fault"
        slowest_s[p] = round(max(late), 2)
    assert max(slowest_s.values()) <= bound_s, f"longest from acknowledgement to read, by partition: {slowest_s}"
