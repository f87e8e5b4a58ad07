"""Brokers killed and stopped under load: the ISR follows, acks=all keeps its promise.

- kill -9 a follower: the leader drops it from the ISR within the lag time (before
  ZooKeeper even notices it is gone), acks=all goes on with min.insync.replicas=2;
  restarted, it catches up and rejoins the ISR with a log identical to the leader's.
- kill -9 the leader while an idempotent producer writes: after the controller
  elects a new leader, every acknowledged record is there exactly once, and the old
  leader comes back as a follower (truncating what was never committed).
- SIGTERM the leader: controlled shutdown moves leadership first; the producer
  sees only retriable errors and loses nothing.
"""

from __future__ import annotations

import threading
import time

import pytest

from replog.client import Consumer, Producer
from replog.common.zk import schema
from replog.devcluster import ClusterSpec

from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    start_cluster,
    create_topic,
    describe,
    partition_state,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

LAG_MS = 2000
SESSION_MS = 15000


class BackgroundProducer:
    """Sends numbered records until stopped; remembers which were acknowledged, and when."""

    def __init__(self, bootstrap: list[str], topic: str, *, idempotent: bool = True) -> None:
        self.producer = Producer(bootstrap, acks=-1, idempotent=idempotent, linger_ms=5, retry_backoff_ms=100,
                                 request_timeout_ms=5000)
        self.topic = topic
        self.acked: dict[bytes, int] = {}
        self.ack_times: list[float] = []
        self.errors: list[Exception] = []
        self.sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            value = f"r{self.sent:06d}".encode()
            self.sent += 1
            future = self.producer.send(self.topic, value, partition=0)
            future.add_done_callback(lambda f, value=value: self._done(value, f))
            time.sleep(0.002)

    def _done(self, value: bytes, future) -> None:
        with self._lock:
            if future.exception() is not None:
                self.errors.append(future.exception())
            else:
                self.acked[value] = future.result().offset
                self.ack_times.append(time.monotonic())

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def acked_since(self, moment: float) -> int:
        with self._lock:
            return sum(1 for t in self.ack_times if t > moment)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.producer.close()


def consume_all(bootstrap: list[str], topic: str, end_offset: int) -> list:
    with Consumer(bootstrap, topic) as consumer:
        records = []
        deadline = time.monotonic() + 30
        while (not records or records[-1].offset < end_offset - 1) and time.monotonic() < deadline:
            records += consumer.poll(500)
    return records


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def test_killed_follower_leaves_the_isr_within_the_lag_time_and_rejoins(start_cluster):
    # The session outlives the lag time several times over, so a dead broker's registration stays in
    # ZooKeeper long after the leader's lag check should have dropped it: which of the two took broker
    # 3 out is then told by what ZooKeeper held when the ISR changed, not by a clock on a busy machine.
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=SESSION_MS,
                                          extra_args={"broker": ["--replica-lag-time-max-ms", str(LAG_MS)]}))
    with zk_session(cluster) as zk:
        create_topic(zk, "fol", {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "fol", 1, 30)
        producer = BackgroundProducer(bootstrap(cluster), "fol").start()
        try:
            wait_for(lambda: producer.acked_count() > 200, 20, "acks before the kill")
            cluster.kill("broker-3")

            def registered_when_shrunk():
                state = partition_state(zk, "fol")
                if state is None or set(state.isr) != {1, 2}:
                    return None
                return {"registered": zk.get(schema.broker_path(3)) is not None}
            shrunk = wait_for(registered_when_shrunk, SESSION_MS / 1000, "the ISR of fol-0 to drop broker 3")
            assert shrunk["registered"], "broker 3 left the ISR only when its session expired, not by the lag check"
            wait_for_isr(cluster, zk, "fol", {1, 2}, 10)
            shrunk_at = time.monotonic()
            wait_for(lambda: producer.acked_since(shrunk_at) > 200, 20, "acks=all with ISR {1, 2}")

            # The restarted broker registers once its old session has expired.
            cluster.start("broker-3")
            cluster.wait_healthy(["broker-3"], SESSION_MS / 1000 + 30)
            state = wait_for_isr(cluster, zk, "fol", {1, 2, 3}, 40)
            assert state.leader == 1
        finally:
            producer.stop()
    assert not producer.errors, producer.errors[:3]
    end = describe(cluster, 1, "fol").log_end_offset
    wait_caught_up(cluster, (1, 2, 3), "fol", end, 20)
    assert len({describe(cluster, b, "fol").size_bytes for b in (1, 2, 3)}) == 1
    records = consume_all(bootstrap(cluster), "fol", end)
    assert [r.offset for r in records] == list(range(end))
    assert set(producer.acked) <= {r.value for r in records}


def test_killed_leader_loses_no_acknowledged_record_and_duplicates_none(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=3000))
    with zk_session(cluster) as zk:
        create_topic(zk, "idem", {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "idem", 1, 30)
        producer = BackgroundProducer(bootstrap(cluster), "idem").start()
        try:
            wait_for(lambda: producer.acked_count() > 300, 20, "acks before the kill")
            cluster.kill("broker-1")
            state = wait_for(lambda: (s := partition_state(zk, "idem")).leader in (2, 3) and s, 15, "a new leader")
            assert state.leader_epoch >= 1
            failover_at = time.monotonic()
            wait_for(lambda: producer.acked_since(failover_at) > 300, 30, "acks from the new leader")
        finally:
            producer.stop()
        assert not producer.errors, producer.errors[:3]
        new_leader = partition_state(zk, "idem").leader
        end = describe(cluster, new_leader, "idem").log_end_offset
        records = consume_all(bootstrap(cluster), "idem", end)
        values = [r.value for r in records]
        assert len(values) == len(set(values)), "a record was written twice"
        assert set(producer.acked) <= set(values), "an acknowledged record was lost"
        # Acknowledged offsets are where the records really are (a retried batch got its original offset).
        by_value = {r.value: r.offset for r in records}
        assert all(by_value[v] == offset for v, offset in producer.acked.items())

        # The old leader returns as a follower, drops anything never committed, and matches.
        cluster.start("broker-1")
        cluster.wait_healthy(["broker-1"], 30)
        wait_for_isr(cluster, zk, "idem", {1, 2, 3}, 40)
    wait_caught_up(cluster, (1, 2, 3), "idem", end, 20)
    assert len({describe(cluster, b, "idem").size_bytes for b in (1, 2, 3)}) == 1


def test_controlled_shutdown_moves_leadership_before_the_leader_stops(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "calm", {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "calm", 1, 30)
        producer = BackgroundProducer(bootstrap(cluster), "calm").start()
        try:
            wait_for(lambda: producer.acked_count() > 200, 20, "acks before the stop")
            started = time.monotonic()
            cluster.stop("broker-1")
            stop_s = time.monotonic() - started
            state = partition_state(zk, "calm")
            assert state.leader in (2, 3) and 1 not in state.isr, state
            assert stop_s < 5, stop_s
            moved_at = time.monotonic()
            wait_for(lambda: producer.acked_since(moved_at) > 200, 20, "acks from the new leader")
        finally:
            producer.stop()
    assert not producer.errors, producer.errors[:3]
    assert "controlled shutdown done" in cluster.tail("broker-1", 20)


def test_paused_broker_whose_session_expired_registers_again_and_rejoins(start_cluster):
    """A pause longer than the ZooKeeper session (a long GC, a frozen VM): the controller
    drops the broker; when it wakes, it registers under a new broker epoch and catches up."""
    import signal

    from replog.common.zk import schema

    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=3000))
    with zk_session(cluster) as zk:
        create_topic(zk, "nap", {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "nap", 1, 30)
        _, before = zk.get(schema.broker_path(3))
        cluster.signal("broker-3", signal.SIGSTOP)
        try:
            wait_for_isr(cluster, zk, "nap", {1, 2}, 20)
            wait_for(lambda: zk.get(schema.broker_path(3)) is None, 20, "broker 3's registration to expire")
        finally:
            cluster.signal("broker-3", signal.SIGCONT)
        found = wait_for(lambda: zk.get(schema.broker_path(3)), 20, "broker 3 to register again")
        assert found[1].czxid > before.czxid
        wait_for_isr(cluster, zk, "nap", {1, 2, 3}, 30)
    assert "registered /brokers/ids/3" in cluster.tail("broker-3", 50)
