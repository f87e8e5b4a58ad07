"""Partition reassignment, KIP-455 style (seed F; docs/operations.md, "Adding a broker and moving replicas to it").

Theory of operation
-------------------
OAR = original replicas, RAR = target replicas.  Starting (or re-targeting):

* AR := RAR + (OAR - RAR), adding := RAR - OAR, removing := OAR - RAR, written
  to the topic znode -- that znode alone is enough to resume after a failover;
* the leader epoch is bumped (as Kafka does) and LeaderAndIsr goes to every
  live replica of AR, the adding ones with ``is_new``;
* replicas the previous target was adding and the new one does not want are
  stopped and deleted, and leave the ISR (a new leader is elected among the
  rest if the leader was one of them).

Completing, as soon as every RAR member is in the ISR (checked at once, on
every accepted AlterPartition via ``IsrChanged``, and at startup):

* if the leader is not in RAR (or cannot lead), the reassignment election picks
  the first RAR member that is eligible and in the ISR -- or we wait;
* ISR := ISR ∩ RAR and the leader epoch is bumped (state written first), then
  AR := RAR with no adding/removing, StopReplica(delete) to OAR - RAR, and the
  request is cleared from ``/admin/reassign_partitions``.

Cancelling (target ``None``) is a reassignment back to OAR, as in Kafka: the
adding replicas are dropped and deleted and it completes when OAR is in the
ISR -- immediately in the usual case.  A request that would leave the ISR
without any member in the new assignment is refused rather than lose data.

Refused requests (unknown partition, topic being deleted, empty or duplicate
or non-live target, cancel with nothing running) are answered per partition
and cleared from the request znode.
"""

from __future__ import annotations

from collections.abc import Mapping

from replog.common.core.partitions import NO_LEADER, TopicPartition

from ..builder import PlanBuilder
from ..election import offline_partition_leader, reassignment_leader
from ..errors import ErrorCode
from ..events import IsrChanged, ReassignmentRequested
from ..model import ReplicaAssignment
from ..plan import PartitionResult, PartitionResultsReply
from ..states import ReplicaState, check_replica_transition
from .leadership import initialize_partition, keep_elr_inside, restore_leadership


def on_reassignment_requested(b: PlanBuilder, event: ReassignmentRequested) -> None:
    b.reply = PartitionResultsReply(apply_requests(b, event.targets))


def on_isr_changed(b: PlanBuilder, event: IsrChanged) -> None:
    for tp in event.partitions:
        if b.reassignment_of(tp) is not None and not b.is_deleting(tp.topic):
            maybe_complete(b, tp)


def apply_requests(
    b: PlanBuilder, targets: Mapping[TopicPartition, tuple[int, ...] | None]
) -> tuple[PartitionResult, ...]:
    results = []
    for tp in sorted(targets):
        target = targets[tp]
        code, message = _validate(b, tp, target)
        if code is ErrorCode.NONE:
            if target is None:
                target = b.assignment_of(tp).original
            code, message = _start(b, tp, tuple(target))
        if b.reassignment_of(tp) is None:
            b.clear_reassignment_request(tp)  # refused, finished, or nothing to do
        results.append(PartitionResult(tp, code, message))
    return tuple(results)


def _validate(b: PlanBuilder, tp: TopicPartition, target: tuple[int, ...] | None) -> tuple[ErrorCode, str]:
    if b.assignment_of(tp) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist"
    if b.is_deleting(tp.topic):
        return ErrorCode.TOPIC_DELETION_IN_PROGRESS, f"topic {tp.topic} is being deleted"
    if target is None:
        if b.reassignment_of(tp) is None:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"no reassignment of {tp} is in progress"
        return ErrorCode.NONE, ""
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"empty target replica list for {tp}"
    if len(set(target)) != len(target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"duplicate brokers in target {list(target)} for {tp}"
    dead = [x for x in target if x not in b.live]
    if dead:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"target brokers {dead} for {tp} are not alive"
    return ErrorCode.NONE, ""


def _start(b: PlanBuilder, tp: TopicPartition, target: tuple[int, ...]) -> tuple[ErrorCode, str]:
    current = b.assignment_of(tp)
    running = b.reassignment_of(tp)
    if running == target or (running is None and target == current.replicas):
        return ErrorCode.NONE, ""  # already there, or already on its way there
    original = current.original
    full = target + tuple(x for x in original if x not in target)
    dropped = [x for x in current.replicas if x not in full]
    state = b.state_of(tp)
    if state is not None:
        isr = tuple(x for x in state.isr if x not in dropped)
        if not isr:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"moving {tp} to {list(target)} would leave no in-sync replica")
        leader = state.leader
        if leader in dropped:
            elected = offline_partition_leader(full, isr, b.eligible, False).leader
            leader = NO_LEADER if elected is None else elected
            b.leader_elections += elected is not None
    epoch = b.leader_epoch_after_bump(tp)
    for broker_id in dropped:
        b.stop_replica(tp, broker_id, delete=True, leader_epoch=epoch)
    for broker_id in target:
        if broker_id not in current.replicas:
            check_replica_transition(tp, broker_id, b.replica_state(tp, broker_id), ReplicaState.NEW)
            b.start_replica(tp, broker_id)
    if state is not None:
        b.write(tp, leader, isr, bump_leader_epoch=True)
        keep_elr_inside(b, tp, full)
    b.set_assignment(tp, ReplicaAssignment(
        full,
        tuple(x for x in target if x not in original),
        tuple(x for x in original if x not in target),
    ))
    b.set_reassignment(tp, target)
    b.notify(tp)
    if state is not None and b.state_of(tp).leader == NO_LEADER:
        restore_leadership(b, tp)  # an unclean topic may now lead on an added replica
    maybe_complete(b, tp)
    return ErrorCode.NONE, ""


def maybe_complete(b: PlanBuilder, tp: TopicPartition) -> bool:
    """Finish the partition's reassignment if every target replica is in the ISR."""
    target = b.reassignment_of(tp)
    assert target is not None, f"{tp} is not being reassigned"
    state = b.state_of(tp)
    current = b.assignment_of(tp)
    if state is not None:
        if not all(x in state.isr for x in target):
            return False
        leader = state.leader
        if leader not in target or leader not in b.eligible:
            leader = reassignment_leader(target, state.isr, b.eligible)
            if leader is None:
                return False
            b.leader_elections += 1
        epoch = b.leader_epoch_after_bump(tp)
        b.write(tp, leader, tuple(x for x in state.isr if x in target), bump_leader_epoch=True)
        keep_elr_inside(b, tp, target)
    else:
        epoch = -1  # a partition that never started: nothing to hand over
    for broker_id in current.replicas:
        if broker_id not in target:
            b.stop_replica(tp, broker_id, delete=True, leader_epoch=epoch)
    b.set_assignment(tp, ReplicaAssignment(target))
    b.set_reassignment(tp, None)
    b.clear_reassignment_request(tp)
    b.partitions_moved += 1
    if state is None:
        initialize_partition(b, tp)
    else:
        b.notify(tp)
    return True
