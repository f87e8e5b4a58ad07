"""The broker's turn (turn.py): one loop at a time, and work nobody waits on goes last.

- `when_idle` takes a free turn at once, and a busy one only after every thread holding or waiting
  for it has had it, unless its deadline passes first.
- An ISR-only LeaderAndIsr to a leader waits for an idle turn; a new leadership does not.
"""

from __future__ import annotations

import threading
import time

from replog.broker.adapters.delayed_produces import DelayedProduces
from replog.broker.adapters.replica_manager import ReplicaManager
from replog.broker.adapters.state_changes import ReplicaStateChanges
from replog.broker.adapters.turn import Turn
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.core.topic_partition import TopicPartition
from replog.broker.log import LogConfig
from replog.common.clock import ManualClock
from tests.unit.broker.adapters.adapter_helpers import wait_for


def test_when_idle_takes_a_free_turn_at_once_also_after_a_reentrant_holder():
    turn = Turn()
    with turn:
        with turn:
            pass
    started = time.monotonic()
    with turn.when_idle(started + 10):
        pass
    assert time.monotonic() - started < 1


def test_when_idle_lets_the_holder_and_every_thread_already_waiting_go_first():
    turn = Turn()
    order: list[str] = []

    def waiter() -> None:
        with turn:
            order.append("waiter")

    def idle() -> None:
        with turn.when_idle(time.monotonic() + 10):
            order.append("idle")

    with turn:
        threads = [threading.Thread(target=waiter) for _ in range(3)]
        for thread in threads:
            thread.start()
        wait_for(lambda: turn.wanted == 4, "three threads waiting for the turn")
        idler = threading.Thread(target=idle)
        idler.start()
        time.sleep(0.05)
        order.append("holder")
    for thread in (*threads, idler):
        thread.join(timeout=5)
    assert order == ["holder", "waiter", "waiter", "waiter", "idle"]


def test_when_idle_stops_yielding_at_its_deadline():
    # Two threads hand the turn to each other without a gap, so it is never idle.
    turn = Turn()
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            with turn:
                time.sleep(0.002)

    threads = [threading.Thread(target=busy) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: turn.wanted == 2, "both busy threads holding or waiting")
        started = time.monotonic()
        with turn.when_idle(started + 0.2):
            taken_s = time.monotonic() - started
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)
    assert 0.19 <= taken_s < 3


class Fetchers:
    def add(self, leader_id, partitions, trace_context=None) -> None:
        pass

    def remove(self, partitions) -> None:
        pass


class TopicConfigs:
    def watch(self, topic: str) -> None:
        pass

    def unwatch(self, topic: str) -> None:
        pass


PARTITIONS = [TopicPartition("orders", p) for p in range(150)]  # more than one chunk of ISR-only changes


def leader_of_every_partition(tmp_path, turn: Turn) -> tuple[ReplicaStateChanges, ReplicaManager]:
    clock = ManualClock(0)
    replicas = ReplicaManager(broker_id=1, log_dir=tmp_path, log_config=LogConfig(), clock=clock)
    changes = ReplicaStateChanges(
        broker_id=1, replicas=replicas, fetchers=Fetchers(),
        delayed_produces=DelayedProduces(replicas.produce_progress, clock), topic_configs=TopicConfigs(),
        now_ms=clock.monotonic_ms, turn=turn, isr_only_yield_max_s=30)
    changes.leader_and_isr([LeaderAndIsrDecision(tp, 1, 1, (1, 2, 3), 1, (1, 2, 3)) for tp in PARTITIONS],
                           init=False, parent=None)
    return changes, replicas


def isrs(replicas: ReplicaManager) -> set[tuple[int, ...]]:
    return {replicas.get(tp).replica.leader.isr for tp in PARTITIONS}


def test_an_isr_only_change_waits_for_an_idle_turn_and_a_new_leadership_does_not(tmp_path):
    turn = Turn()
    changes, replicas = leader_of_every_partition(tmp_path, turn)
    shrink = [LeaderAndIsrDecision(tp, 1, 1, (1, 2), 2, (1, 2, 3)) for tp in PARTITIONS]
    with turn:  # an append or a fetch read in progress
        applying = threading.Thread(target=lambda: changes.leader_and_isr(shrink, init=False, parent=None))
        applying.start()
        time.sleep(0.2)
        assert applying.is_alive() and isrs(replicas) == {(1, 2, 3)}
    applying.join(timeout=10)
    assert isrs(replicas) == {(1, 2)}

    with turn:
        results = changes.leader_and_isr([LeaderAndIsrDecision(tp, 1, 2, (1, 2), 3, (1, 2, 3)) for tp in PARTITIONS],
                                         init=False, parent=None)
    assert {r.error_code for r in results} == {0}
    assert {replicas.get(tp).replica.state.leader_epoch for tp in PARTITIONS} == {2}
    replicas.close()
