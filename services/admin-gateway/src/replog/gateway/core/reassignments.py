"""Reassignment decisions: validate and merge plans, cancel, generate, progress.

Theory of operation
-------------------
A reassignment moves a partition's replicas to a target list (docs/architecture.md, "Control flow"; Kafka
KIP-455). The gateway never moves anything itself: it writes the targets into
``/admin/reassign_partitions`` and the controller carries them out, recording
``adding_replicas`` / ``removing_replicas`` in ``/brokers/topics/<topic>``
while it works and deleting its entries from the request when done.

* Execute merges new targets into any pending request (a new target for a
  partition replaces the old one, as KIP-455 allows), so several plans can run
  at once; the adapter writes the merge with a version check.
* Cancel is an entry with an empty replica list; the controller reverts the
  partition to its original replicas (assigned minus adding).
* A partition is in progress while the request names it or its assignment has
  adding / removing replicas. Verify compares the assignment with the plan's
  target once nothing is in progress: equal is COMPLETE, different is FAILED
  (cancelled, or overridden by another plan).
* A plan may change the replication factor (Kafka allows it); it may not name
  a partition twice, a broker twice in one partition, an empty replica list,
  a partition that does not exist, or a broker the cluster has never seen
  (neither registered nor in any assignment).
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

from replog.common.core import placement
from replog.common.core.errors import RequestError
from replog.common.core.partitions import TopicPartition
from replog.common.zk.schema import ReassignmentRequest, ReassignmentThrottle

from replog.common.topic_admin.core.model import ClusterView
from replog.common.topic_admin.core.refusal import invalid, not_found, precondition
from replog.common.topic_admin.core.topics import ZK_REQUEST_BYTES_MAX, AssignmentEntry

PLAN_PARTITIONS_MAX = 100_000


class Status(enum.Enum):
    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(frozen=True)
class Execution:
    request: ReassignmentRequest                 # the merged request to store
    current: dict[TopicPartition, tuple[int, ...]]   # original replicas of the partitions named (rollback)
    throttle: ReassignmentThrottle | None        # to store, when the request sets one


@dataclass(frozen=True)
class Cancellation:
    request: ReassignmentRequest
    cancelled: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Progress:
    topic: str
    partition: int
    target: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    status: Status
    leader: int
    # Replicas whose lag measures this partition's progress: those being added,
    # or, before the controller has started, those the target adds.
    catching_up: tuple[int, ...]


def label(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


# --- validation ---------------------------------------------------------------------------------

def validate_plan(
    view: ClusterView, entries: Sequence[AssignmentEntry], *, check_brokers: bool = True
) -> dict[TopicPartition, tuple[int, ...]]:
    if not entries:
        raise invalid("The reassignment plan names no partitions.")
    if len(entries) > PLAN_PARTITIONS_MAX:
        raise invalid(f"The plan names {len(entries)} partitions, more than the {PLAN_PARTITIONS_MAX} allowed at once.")
    known = view.known_broker_ids()
    plan: dict[TopicPartition, tuple[int, ...]] = {}
    for topic_name, partition, replicas in entries:
        tp = (topic_name, partition)
        if tp in plan:
            raise invalid(f"Partition {label(tp)} is listed twice in the plan.")
        topic = view.topic(topic_name)
        if topic is None or partition not in topic.assignment.partitions:
            raise invalid(f"Partition {label(tp)} in the plan does not exist.")
        if topic.deleting:
            raise precondition(f"Topic '{topic_name}' is being deleted; it cannot be reassigned.")
        if not replicas:
            raise invalid(f"Partition {label(tp)} has an empty replica list in the plan.")
        seen: set[int] = set()
        for broker in replicas:
            if broker in seen:
                raise invalid(f"Broker {broker} is listed twice in the replicas {list(replicas)} of {label(tp)}.")
            seen.add(broker)
            if check_brokers and broker not in known:
                raise invalid(
                    f"Unknown broker {broker} in the replicas of {label(tp)}; "
                    f"known brokers: {', '.join(map(str, sorted(known))) or 'none'}."
                )
        plan[tp] = tuple(replicas)
    return plan


# --- execute and cancel ------------------------------------------------------------------------------

def plan_execute(view: ClusterView, entries: Sequence[AssignmentEntry], throttle_bytes_per_s: int) -> Execution:
    if throttle_bytes_per_s < 0:
        raise invalid(f"The throttle must be 0 (none) or more bytes per second, got {throttle_bytes_per_s}.")
    plan = validate_plan(view, entries)
    pending = dict(view.reassignment.targets) if view.reassignment else {}
    merged = ReassignmentRequest({**pending, **plan})
    _check_size(merged)
    current = {tp: view.topics[tp[0]].original_replicas(tp[1]) for tp in plan}
    throttle = ReassignmentThrottle(throttle_bytes_per_s) if throttle_bytes_per_s > 0 else None
    return Execution(merged, current, throttle)


def plan_cancel(view: ClusterView, partitions: Sequence[TopicPartition]) -> Cancellation:
    running = in_progress(view)
    if partitions:
        chosen = list(dict.fromkeys(partitions))
        for tp in chosen:
            topic = view.topic(tp[0])
            if topic is None or tp[1] not in topic.assignment.partitions:
                raise invalid(f"Partition {label(tp)} does not exist.")
            if tp not in running:
                raise precondition(f"No reassignment is in progress for partition {label(tp)}.")
    else:
        chosen = sorted(running)
        if not chosen:
            raise precondition("No reassignment is in progress.")
    pending = dict(view.reassignment.targets) if view.reassignment else {}
    merged = ReassignmentRequest({**pending, **{tp: () for tp in chosen}})
    _check_size(merged)
    return Cancellation(merged, tuple(sorted(chosen)))


def _check_size(request: ReassignmentRequest) -> None:
    size = len(request.encode())
    if size > ZK_REQUEST_BYTES_MAX:
        raise precondition(
            f"The pending reassignment request would take {size} bytes, more than the {ZK_REQUEST_BYTES_MAX} "
            "ZooKeeper accepts; wait for the reassignments in progress to finish."
        )


# --- progress -------------------------------------------------------------------------------------------

def in_progress(view: ClusterView) -> dict[TopicPartition, tuple[int, ...]]:
    """Partitions being reassigned, with their targets."""
    running: dict[TopicPartition, tuple[int, ...]] = {}
    requested = view.reassignment.targets if view.reassignment else {}
    for name, topic in view.topics.items():
        for partition in topic.assignment.partitions:
            if topic.reassigning(partition):
                removing = set(topic.assignment.removing_replicas.get(partition, ()))
                running[(name, partition)] = tuple(
                    r for r in topic.assignment.partitions[partition] if r not in removing
                )
    for tp, target in requested.items():
        topic = view.topic(tp[0])
        if topic is None or tp[1] not in topic.assignment.partitions:
            continue  # the controller will drop it
        if target:
            running[tp] = tuple(target)
        elif tp in running:   # a cancel the controller has not carried out yet: heading back
            running[tp] = topic.original_replicas(tp[1])
    return running


def progress(view: ClusterView, targets: Mapping[TopicPartition, tuple[int, ...]]) -> list[Progress]:
    running = in_progress(view)
    out = []
    for tp in sorted(targets):
        target = tuple(targets[tp])
        topic = view.topics[tp[0]]
        replicas = topic.assignment.partitions[tp[1]]
        adding = topic.assignment.adding_replicas.get(tp[1], ())
        removing = topic.assignment.removing_replicas.get(tp[1], ())
        if tp in running:
            status = Status.IN_PROGRESS
        elif tuple(replicas) == target:
            status = Status.COMPLETE
        else:
            status = Status.FAILED
        state = topic.states.get(tp[1])
        catching_up = tuple(adding) or tuple(r for r in target if r not in replicas)
        out.append(Progress(tp[0], tp[1], target, tuple(adding), tuple(removing), status,
                            state.leader if state else -1, catching_up if status is Status.IN_PROGRESS else ()))
    return out


# --- generate ---------------------------------------------------------------------------------------------

def generate(
    view: ClusterView, topics: Sequence[str], broker_ids: Sequence[int], rng: random.Random
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, tuple[int, ...]]]:
    """(current, proposed): Kafka's --generate, placing each topic afresh on the brokers given."""
    if not topics:
        raise invalid("Name at least one topic to move.")
    if not broker_ids:
        raise invalid("Name at least one target broker.")
    seen: set[int] = set()
    known = view.known_broker_ids()
    for broker in broker_ids:
        if broker in seen:
            raise invalid(f"Broker {broker} is listed twice in the broker list.")
        seen.add(broker)
        if broker not in known:
            raise invalid(f"Unknown broker {broker}; known brokers: {', '.join(map(str, sorted(known))) or 'none'}.")
    racks = {b: (view.brokers[b].rack if b in view.brokers else None) for b in broker_ids}
    if any(r is None for r in racks.values()):
        racks = {b: None for b in broker_ids}   # rack-aware only when every target broker has a rack
    current: dict[TopicPartition, tuple[int, ...]] = {}
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for name in dict.fromkeys(topics):
        topic = view.topic(name)
        if topic is None:
            raise not_found(f"Topic '{name}' does not exist.")
        partitions = sorted(topic.assignment.partitions)
        replication_factor = len(topic.original_replicas(partitions[0]))
        if replication_factor > len(broker_ids):
            raise invalid(
                f"Topic '{name}' has replication factor {replication_factor}, more than the "
                f"{len(broker_ids)} brokers given."
            )
        try:
            placed = placement.assign_replicas_to_brokers(racks, len(partitions), replication_factor, rng)
        except RequestError as exc:
            raise invalid(str(exc)) from None
        for index, partition in enumerate(partitions):
            current[(name, partition)] = topic.original_replicas(partition)
            proposed[(name, partition)] = placed[index]
    return current, proposed
