"""Partition and replica state machines as transition tables: an illegal move raises at once.

Theory of operation
-------------------
Kafka's controller names a state for every partition and every replica and
allows each state to be entered only from a listed set of previous states
(``PartitionStateMachine`` / ``ReplicaStateMachine``).  We keep those tables as
data: ``PARTITION_TRANSITIONS[target]`` and ``REPLICA_TRANSITIONS[target]`` are
the valid previous states, and a move not in the table raises
:class:`~.errors.IllegalStateTransition` at once -- a controller bug, never a
peer's fault.

We do not store these states: they are *derived* from the controller state, so
they can never disagree with it.

Partition:
    NON_EXISTENT  no assignment (never created, or deleted)
    NEW           assigned, but no state znode yet (no replica was alive to lead)
    ONLINE        state znode with a leader
    OFFLINE       state znode with leader -1, or its topic is being deleted

Replica (partition p on broker b):
    NON_EXISTENT  b not in p's assignment
    NEW           just added to the assignment (created topic, reassignment target)
    ONLINE        b alive and assigned
    OFFLINE       b dead, or told to stop (controlled shutdown, before deletion)
    DELETION_*    b was told to stop and delete p's log

Where checks happen: every partition-state write checks its partition move;
replica moves are checked where a replica is started, stopped or deleted.
LeaderAndIsr sent to an assigned live replica of a partition that is not being
deleted is ONLINE -> ONLINE by construction, so the 100K-partition failover path
checks the partition once instead of every replica.
"""

from __future__ import annotations

import enum

from .errors import IllegalStateTransition


class PartitionState(enum.Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


_P = PartitionState
_R = ReplicaState

# target state -> states it may be entered from
PARTITION_TRANSITIONS: dict[PartitionState, frozenset[PartitionState]] = {
    _P.NEW: frozenset({_P.NON_EXISTENT}),
    _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
}

REPLICA_TRANSITIONS: dict[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
    _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
}


def check_partition_transition(partition: object, current: PartitionState, target: PartitionState) -> None:
    """Raise unless ``current -> target`` is in the partition table."""
    if current not in PARTITION_TRANSITIONS[target]:
        raise IllegalStateTransition(
            f"partition {partition}: illegal transition {current.value} -> {target.value}"
        )


def check_replica_transition(
    partition: object, broker_id: int, current: ReplicaState, target: ReplicaState
) -> None:
    """Raise unless ``current -> target`` is in the replica table."""
    if current not in REPLICA_TRANSITIONS[target]:
        raise IllegalStateTransition(
            f"replica of {partition} on broker {broker_id}: "
            f"illegal transition {current.value} -> {target.value}"
        )


def derive_partition_state(assigned: bool, deleting: bool, leader: int | None) -> PartitionState:
    """The partition's state; ``leader`` is ``None`` when it has no state znode."""
    if not assigned:
        return _P.NON_EXISTENT
    if deleting:
        return _P.OFFLINE
    if leader is None:
        return _P.NEW
    return _P.OFFLINE if leader < 0 else _P.ONLINE


def derive_replica_state(assigned: bool, alive: bool, deletion_pending: bool | None) -> ReplicaState:
    """The replica's state; ``deletion_pending`` is ``None`` unless its topic is being deleted."""
    if not assigned:
        return _R.NON_EXISTENT
    if deletion_pending is not None:
        if deletion_pending:
            return _R.DELETION_STARTED
        # Not awaited: acknowledged, or on a dead broker that deletes it when it
        # comes back (its INIT LeaderAndIsr no longer lists the topic).
        return _R.DELETION_SUCCESSFUL if alive else _R.DELETION_INELIGIBLE
    return _R.ONLINE if alive else _R.OFFLINE
