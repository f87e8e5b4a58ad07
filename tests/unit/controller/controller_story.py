"""Helpers for controller-core stories: build a cluster, run an event, look at the plan."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Mapping

from replog.common.core.partitions import TopicPartition
from replog.controller.core import apply, decide
from replog.controller.core.invariants import violations
from replog.controller.core.model import (
    BrokerInfo,
    ControllerSettings,
    ControllerState,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicElectionConfig,
)
from replog.controller.core.plan import CreatePartitionState, LeaderAndIsrRequest, Plan, SetPartitionState
from replog.controller.core.steps import NEW_LEADERS, Send, Write

CONTROLLER_EPOCH = 7


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def broker(broker_id: int, rack: str | None = None, broker_epoch: int | None = None) -> BrokerInfo:
    return BrokerInfo(broker_id, f"broker-{broker_id}", 9090 + broker_id, rack,
                      100 + broker_id if broker_epoch is None else broker_epoch)


def brokers(*ids: int) -> dict[int, BrokerInfo]:
    return {i: broker(i) for i in ids}


def cluster(
    *,
    live: Iterable[int] = (1, 2, 3),
    topics: Mapping[str, list[tuple[int, ...]]] | None = None,
    states: Mapping[tuple[str, int], tuple[int, tuple[int, ...]] | LeaderAndIsr | None] | None = None,
    assignments: Mapping[tuple[str, int], ReplicaAssignment] | None = None,
    configs: Mapping[str, TopicElectionConfig] | None = None,
    deleting: Mapping[str, frozenset[tuple[int, int]]] | None = None,
    reassignments: Mapping[tuple[str, int], tuple[int, ...]] | None = None,
    shutting_down: Iterable[int] = (),
    settings: ControllerSettings | None = None,
    last_rebalance_check_ms: int | None = None,
) -> ControllerState:
    """A state for a story.

    ``topics`` gives each topic's replica lists.  Every partition starts with
    leader = first replica, ISR = all replicas, leader epoch 0, partition epoch 0,
    unless ``states`` says otherwise: ``(leader, isr)``, a full ``LeaderAndIsr``,
    or ``None`` for a NEW partition without state.
    """
    all_assignments: dict[TopicPartition, ReplicaAssignment] = {}
    partition_states: dict[TopicPartition, LeaderAndIsr] = {}
    for topic, replica_lists in (topics or {}).items():
        for p, replicas in enumerate(replica_lists):
            all_assignments[tp(topic, p)] = ReplicaAssignment(tuple(replicas))
            partition_states[tp(topic, p)] = LeaderAndIsr(replicas[0], 0, tuple(replicas), 1, 0)
    for key, assignment in (assignments or {}).items():
        all_assignments[tp(*key)] = assignment
    for key, given in (states or {}).items():
        if given is None:
            partition_states.pop(tp(*key), None)
        elif isinstance(given, LeaderAndIsr):
            partition_states[tp(*key)] = given
        else:
            leader, isr = given
            partition_states[tp(*key)] = LeaderAndIsr(leader, 0, tuple(isr), 1, 0)
    return ControllerState.build(
        controller_id=1,
        controller_epoch=CONTROLLER_EPOCH,
        live_brokers=brokers(*live),
        assignments=all_assignments,
        partition_states=partition_states,
        topic_configs=configs,
        topics_being_deleted=deleting,
        reassignments={tp(*k): v for k, v in (reassignments or {}).items()},
        shutting_down_brokers=shutting_down,
        settings=settings,
        last_rebalance_check_ms=last_rebalance_check_ms,
    )


def run(state: ControllerState, event: object, seed: int = 0) -> tuple[Plan, ControllerState]:
    """Decide and apply; checks that deciding changed nothing and the result is sound."""
    before = repr(state)
    plan = decide(state, event, random.Random(seed))
    assert repr(state) == before, "decide() changed the state"
    after = apply(state, plan)
    problems = violations(after)
    assert not problems, problems
    return plan, after


def writes(plan: Plan) -> dict[TopicPartition, LeaderAndIsr]:
    """New partition states written by the plan."""
    return {w.partition: w.state for w in plan.zk_writes
            if isinstance(w, (SetPartitionState, CreatePartitionState))}


def wave(plan: Plan, name: str) -> Send:
    """The plan's wave of requests of that name (an empty one when the plan has none)."""
    return next((send for send in plan.sends if send.wave == name), Send(name))


def writes_before(plan: Plan, name: str) -> int:
    """How many ZooKeeper writes the plan persists before that wave goes out (0 without that wave)."""
    written = 0
    for step in plan.steps:
        if isinstance(step, Send) and step.wave == name:
            return written
        written += len(step.writes) if isinstance(step, Write) else 0
    return 0


def leader_and_isr(plan: Plan) -> dict[int, LeaderAndIsrRequest]:
    """Each broker's LeaderAndIsr: its first-wave request (new leader epochs) and the later one,
    merged in the order sent. Within a wave, one request per broker."""
    for send in plan.sends:
        ids = [r.broker_id for r in send.leader_and_isr]
        assert len(ids) == len(set(ids)), "two LeaderAndIsr requests to one broker in one wave"
    assert not any(r.init for r in wave(plan, NEW_LEADERS).leader_and_isr)
    requests: dict[int, LeaderAndIsrRequest] = {}
    for r in plan.leader_and_isr:
        held = requests.get(r.broker_id)
        requests[r.broker_id] = r if held is None else dataclasses.replace(
            held, partitions=held.partitions + r.partitions)
    return requests


def sent_partitions(plan: Plan, broker_id: int) -> set[TopicPartition]:
    request = leader_and_isr(plan).get(broker_id)
    return set() if request is None else {d.partition for d in request.partitions}


def stops(plan: Plan) -> dict[int, dict[TopicPartition, bool]]:
    """broker -> {partition: delete}"""
    return {r.broker_id: {p.partition: p.delete for p in r.partitions} for r in plan.stop_replica}
