"""One cell of the matrix: fresh topics, load, a fault, its heal, more load, settle, check.

Every cell writes its own two topics (an RF 3 topic of 6 partitions with min.insync.replicas=2,
whose partition 0 names the leader and follower targets, and an RF 2 topic of 2 partitions) on a
cluster the cells share. The load runs half of `load_s` before the fault and at least the other half
after the heal, and on until every partition has taken a write after the heal (with a deadline). Then the
cluster settles (every process healthy, every ISR full and caught up) and a fresh consumer reads
every partition up to its high watermark: the final logs the checker compares the history with.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from replog.client import Consumer
from tests.integration.broker_helpers import create_topic, describe, partition_state, wait_for, wait_for_isr

from . import checker
from .faults import FAULTS, TARGETS, FaultContext
from .history import History, Invoke, Ok
from .network_faults import NETWORK_FAULTS, NETWORK_TARGETS
from .workload import Workload

RF3_PARTITIONS = 6
RF2_PARTITIONS = 2
BROKERS = (1, 2, 3)
SETTLE_TIMEOUT_S = 90.0
DRAIN_S = 60.0
BOUNCE_RESUME_S = 5.0  # after a process comes back, its partitions take writes again within this
EVERY_FAULT = {**FAULTS, **NETWORK_FAULTS}
EVERY_TARGET = {**TARGETS, **NETWORK_TARGETS}


@dataclass
class CellResult:
    """What the matrix keeps of a cell: small even after minutes of load (the history stays with the
    test, the final logs are kept as digests for the comparison with the replicas' files)."""
    fault: str
    target_kind: str
    targets: tuple[str, ...]
    report: checker.Report
    final_digests: dict[tuple[str, int], str]
    replicas: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)  # the ISR after settling
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    goals: dict[str, float] = field(default_factory=dict)

    def row(self) -> tuple[str, ...]:
        named = ", ".join(self.targets) if len(self.targets) <= 2 else f"{len(self.targets)} processes"
        return checker.summary_row(self.fault, f"{self.target_kind} ({named})", self.report)


def topics_of(cell_index: int) -> dict[str, int]:
    return {f"cell{cell_index}-rf3": RF3_PARTITIONS, f"cell{cell_index}-rf2": RF2_PARTITIONS}


def create_cell_topics(zk, cell_index: int) -> None:
    rf3, rf2 = topics_of(cell_index)
    turn = lambda p, n: tuple(BROKERS[(p + i) % len(BROKERS)] for i in range(n))  # noqa: E731 - leaders spread
    create_topic(zk, rf3, {p: turn(p + cell_index, 3) for p in range(RF3_PARTITIONS)}, {"min.insync.replicas": "2"})
    create_topic(zk, rf2, {p: turn(p + cell_index, 2) for p in range(RF2_PARTITIONS)})


def goals(fault_goal: str, kind: str, session_s: float, outage_s: float) -> dict[str, float]:
    """The availability goals (issue 39, section 4) a cell's report must meet: once the fault is
    healed, every partition takes writes again within 5 s; a leader lost, paused or isolated -- its
    partitions take writes again within the session timeout plus 2 s of the fault (the time the
    cluster needs to notice, and a little); ZooKeeper down -- no partition stalls longer than the
    outage (`outage_s`, from the fault to the servers serving again). The issue sets no bound for a
    follower or the controller, nor for the partial cuts and the slow link, beyond the heal's:
    their cells report the longest stall in the table without asserting one (a dead follower holds
    acks=all writes until it leaves the ISR, which on a loaded machine has taken a little over the
    leader's bound). A leader cut from its followers has its own goal, asserted while the cut lasts:
    the ISR shrinks within replica.lag.time.max.ms (network_faults.py)."""
    after_heal = {"resumed_after_heal_s": BOUNCE_RESUME_S}
    if fault_goal == "session-if-leader" and kind == "leader":
        return {"unavailable_after_fault_s": session_s + 2.0, **after_heal}
    if fault_goal == "outage":
        return {"unavailable_after_fault_s": outage_s, **after_heal}
    return after_heal


def run_cell(cluster, zk, history: History, fault_name: str, kind: str, cell_index: int, *, load_s: float,
             session_s: float, lag_s: float = 0.0) -> CellResult:
    """Run the cell, recording into `history` (the caller's, so that it can dump it whatever happens)."""
    fault, partitions = EVERY_FAULT[fault_name], topics_of(cell_index)
    create_cell_topics(zk, cell_index)
    settle(cluster, zk, partitions)
    ctx = FaultContext(cluster, zk, session_s, next(iter(partitions)), lag_s)
    pace = threading.Event()
    bootstrap = [p.address for p in cluster.of_role("broker")]
    workload = Workload(history, bootstrap, partitions)
    workload.start()
    try:
        wait_for(lambda: written_since(history, partitions, 0.0), 60, "every partition to take a first write")
        pace.wait(load_s / 2)
        targets = EVERY_TARGET[kind].choose(ctx)
        fault_at = time.monotonic()
        history.mark("fault", fault_at)
        try:
            fault.inject(ctx, targets)
            pace.wait(fault.hold_s(ctx))
        finally:
            fault.heal(ctx, targets)
        healed_at = time.monotonic()
        history.mark("heal", healed_at)
        pace.wait(load_s / 2)
        deadline_s = session_s + SETTLE_TIMEOUT_S
        wait_for(lambda: written_since(history, partitions, healed_at), deadline_s,
                 "every partition to take a write after the heal")
    finally:
        workload.stop(DRAIN_S)
    replicas, high_watermarks = settle(cluster, zk, partitions)
    final_logs = read_final_logs(bootstrap, high_watermarks)
    report = checker.check(history.events(), final_logs)
    digests = {tp: checker.log_digest(log, high_watermarks[tp]) for tp, log in final_logs.items()}
    return CellResult(fault_name, kind, targets, report, digests, replicas, high_watermarks,
                      goals(fault.goal, kind, session_s, healed_at - fault_at))


def written_since(history: History, partitions: dict[str, int], since_s: float) -> bool:
    events = history.events()
    sends = {(e.producer, e.seq): (e.topic, e.partition) for e in events if isinstance(e, Invoke)}
    written = {sends[(e.producer, e.seq)] for e in events if isinstance(e, Ok) and e.at_s >= since_s}
    return all((t, p) in written for t, n in partitions.items() for p in range(n))


def settle(cluster, zk, partitions: dict[str, int]):
    """Wait until every process is healthy (every ZooKeeper server serving) and every partition has
    its whole assignment in the ISR, caught up to the leader's HW; return each partition's ISR and HW."""
    names = [p.name for p in cluster.processes.values() if p.role in ("zookeeper", "broker", "controller")]
    cluster.wait_healthy(names, SETTLE_TIMEOUT_S)
    replicas, high_watermarks = {}, {}
    for topic, count in partitions.items():
        replication_factor = 3 if topic.endswith("rf3") else 2
        for p in range(count):
            state = wait_for(lambda: (s := partition_state(zk, topic, p)) and len(s.isr) == replication_factor and s,
                             SETTLE_TIMEOUT_S, f"{topic}-{p} to have its whole assignment in the ISR")
            state = wait_for_isr(cluster, zk, topic, set(state.isr), SETTLE_TIMEOUT_S, partition=p)
            replicas[(topic, p)] = tuple(state.isr)
            (high_watermarks[(topic, p)],) = wait_for(lambda: caught_up(cluster, state, topic, p), SETTLE_TIMEOUT_S,
                                                      f"the ISR of {topic}-{p} to hold the leader's records")
    return replicas, high_watermarks


def caught_up(cluster, state, topic: str, partition: int) -> tuple[int] | None:
    """(the leader's HW,) once every ISR member holds the leader's whole log and the HW is at its end."""
    leader = describe(cluster, state.leader, topic, partition)
    if leader is None or not leader.leader or leader.high_watermark != leader.log_end_offset:
        return None
    for broker in state.isr:
        seen = describe(cluster, broker, topic, partition)
        if seen is None or seen.log_end_offset != leader.log_end_offset:
            return None
    return (leader.high_watermark,)


def read_final_logs(bootstrap: list[str], high_watermarks: dict[tuple[str, int], int]) -> dict:
    """Every partition's records below its HW, read by a fresh consumer (offset -> value)."""
    logs: dict[tuple[str, int], dict[int, bytes]] = {tp: {} for tp in high_watermarks}
    for topic in sorted({t for t, _ in high_watermarks}):
        ends = {p: hw for (t, p), hw in high_watermarks.items() if t == topic}
        with Consumer(bootstrap, topic, start=0) as consumer:
            def done() -> bool:
                for record in consumer.poll(200):
                    logs[(topic, record.partition)][record.offset] = record.value
                return all(consumer.positions[p] >= end for p, end in ends.items())
            wait_for(done, SETTLE_TIMEOUT_S, f"a fresh consumer to read {topic} up to its high watermarks {ends}")
    return logs
