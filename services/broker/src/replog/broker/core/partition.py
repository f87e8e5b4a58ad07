"""Partition replica state and the LeaderAndIsr / StopReplica decisions.

Theory of operation (docs/architecture.md, "Data flow"; seed: ReplicaManager
`becomeLeaderOrFollower` / `makeLeaders` / `makeFollowers` / `stopReplica`):

A broker holds one `PartitionState` per hosted replica. The controller is the
only source of leadership: each `LeaderAndIsrDecision` names the leader, its
leader epoch, the ISR and the partition epoch (version of the state znode).
`apply_leader_and_isr` compares the decision with the held state and returns
an outcome value; it changes nothing itself:

- lower leader epoch than held        -> Refusal(FENCED_LEADER_EPOCH)
- a leader epoch more than LEADER_EPOCH_JUMP_MAX past the held one (or, holding none, past
  the log's latest), or above LEADER_EPOCH_MAX -> Refusal(INVALID_REQUEST) (fencing.py says why)
- same leader epoch, older partition epoch -> Refusal(INVALID_UPDATE_VERSION)
- same leader epoch and partition epoch   -> Unchanged (a redelivery)
- same leader epoch, newer partition epoch -> Applied(ISR_UPDATE): ISR or
  assignment changed, the role did not
- newer leader epoch                  -> Applied(BECOME_LEADER | BECOME_FOLLOWER
  | GO_OFFLINE) with the adapter's effects in order

A StopReplica must name a real leader epoch: at least the held one (else FENCED_LEADER_EPOCH),
within LEADER_EPOCH_JUMP_MAX of it, and never -1. A stop "at any epoch" would let any request
that passed the controller fence stop or delete a replica whatever its leadership; the
controller names the partition's current leader epoch for every stop, topic deletion included.

Roles move only along `VALID_PREVIOUS_ROLES` (transitions as data). STOPPED is
terminal: the adapter forgets a stopped replica and starts a new
`PartitionState.new(...)` if the controller assigns it again (as Kafka removes
the Partition from `allPartitions`). Any other move raises
`IllegalReplicaTransition` at once: the core decided wrongly, which is a bug,
not a peer error.

Truncation is not decided here: a new follower starts fetching at its log end
with its last epoch, and the leader's diverging-epoch answer drives
`core/fetch/truncation.py` (KIP-101/KIP-279/KIP-320).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping, NamedTuple

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import LEADER_EPOCH_JUMP_MAX, LEADER_EPOCH_MAX, check_leader_epoch_jump
from replog.broker.core.log_view import NO_LEADER_EPOCH
from replog.common.core.partitions import NO_LEADER, TopicPartition


class ReplicaRole(enum.Enum):
    NEW = "new"  # created, no decision applied yet
    LEADER = "leader"  # serves produce and fetch, tracks followers
    FOLLOWER = "follower"  # fetches from the leader
    OFFLINE = "offline"  # the partition has no leader; neither serve nor fetch
    STOPPED = "stopped"  # StopReplica applied; terminal


VALID_PREVIOUS_ROLES: Mapping[ReplicaRole, frozenset[ReplicaRole]] = {
    ReplicaRole.NEW: frozenset(),  # only ever the initial role
    ReplicaRole.LEADER: frozenset(
        {ReplicaRole.NEW, ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.OFFLINE}
    ),
    ReplicaRole.FOLLOWER: frozenset(
        {ReplicaRole.NEW, ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.OFFLINE}
    ),
    ReplicaRole.OFFLINE: frozenset(
        {ReplicaRole.NEW, ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.OFFLINE}
    ),
    ReplicaRole.STOPPED: frozenset(
        {ReplicaRole.NEW, ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.OFFLINE}
    ),
}


class IllegalReplicaTransition(AssertionError):
    """A role change the table forbids: a bug in the core or its caller."""


def check_transition(previous: ReplicaRole, following: ReplicaRole) -> None:
    if previous not in VALID_PREVIOUS_ROLES[following]:
        raise IllegalReplicaTransition(f"replica role {previous.name} -> {following.name}")


class PartitionState(NamedTuple):
    """What this broker holds for one replica, as last decided by the controller.

    This, the decision, the outcomes and the effects with fields are named tuples, not frozen
    dataclasses: a failover builds each of them for thousands of partitions per request, and a
    frozen dataclass sets its fields one `object.__setattr__` at a time (docs/perf/hot-path-values.md).
    """

    topic_partition: TopicPartition
    broker_id: int
    role: ReplicaRole
    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()  # replicas a reassignment is adding (their traffic may be throttled)

    @classmethod
    def new(cls, topic_partition: TopicPartition, broker_id: int) -> PartitionState:
        return cls(
            topic_partition=topic_partition,
            broker_id=broker_id,
            role=ReplicaRole.NEW,
            leader_id=NO_LEADER,
            leader_epoch=NO_LEADER_EPOCH,
            isr=(),
            partition_epoch=-1,
            replicas=(),
        )

    @property
    def is_leader(self) -> bool:
        return self.role is ReplicaRole.LEADER


class LeaderAndIsrDecision(NamedTuple):
    """The controller's decision for one partition (proto `PartitionState`); a named tuple, as
    `PartitionState` says."""

    topic_partition: TopicPartition
    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    is_new: bool = False
    adding: tuple[int, ...] = ()


# --- effects: what the adapter must do, in the order given -------------------


@dataclass(frozen=True)
class StopFetcher:
    """Stop fetching this partition from its (old) leader."""


class StartFetcher(NamedTuple):
    """Fetch from `leader_id` at our log end with our last epoch (divergence -> core/fetch/truncation.py)."""

    leader_id: int
    leader_epoch: int


class AssignLeaderEpochStart(NamedTuple):
    """Record in the epoch cache that `leader_epoch` starts at the current log end offset.

    Optional for a log that stamps the epoch cache on the first append of a new
    epoch (as `PartitionLog.append_as_leader` does): nothing in the core reads
    the cache entry before that append; the leader's epoch start offset is kept
    in `LeaderReplica.epoch_start_offset`.
    """

    leader_epoch: int


@dataclass(frozen=True)
class CompleteDelayedOperations:
    """Re-check delayed produces and fetches watching this partition (role or ISR changed)."""


@dataclass(frozen=True)
class DeleteLog:
    """Delete the replica's log and checkpoints (StopReplica with delete)."""


Effect = StopFetcher | StartFetcher | AssignLeaderEpochStart | CompleteDelayedOperations | DeleteLog
# The effects without fields, made once: a failover decides several per partition for thousands.
STOP_FETCHER = StopFetcher()
COMPLETE_DELAYED_OPERATIONS = CompleteDelayedOperations()


class ChangeKind(enum.Enum):
    BECOME_LEADER = "become_leader"
    BECOME_FOLLOWER = "become_follower"
    GO_OFFLINE = "go_offline"
    ISR_UPDATE = "isr_update"
    STOP = "stop"


class Applied(NamedTuple):
    """The decision takes effect: hold `state`, run `effects` in order."""

    state: PartitionState
    previous: PartitionState
    change: ChangeKind
    effects: tuple[Effect, ...]


class Unchanged(NamedTuple):
    """Nothing to do (a redelivered decision, or stopping a stopped replica); answer NONE."""

    state: PartitionState
    reason: str


PartitionOutcome = Applied | Unchanged | Refusal


def apply_leader_and_isr(current: PartitionState, decision: LeaderAndIsrDecision, *,
                         log_leader_epoch: int = NO_LEADER_EPOCH) -> PartitionOutcome:
    """Decide what a LeaderAndIsr decision means for the held state (changes nothing).
    `log_leader_epoch`: the latest epoch in the replica's log, the jump's reference while it holds none."""
    assert decision.topic_partition == current.topic_partition, (decision, current)
    refusal = _refuse_malformed(decision, current.broker_id)
    if refusal is not None:
        return refusal
    if decision.leader_epoch > LEADER_EPOCH_MAX or current.leader_epoch == NO_LEADER_EPOCH:
        refusal = check_leader_epoch_jump(decision.leader_epoch, max(current.leader_epoch, log_leader_epoch))
        if refusal is not None:
            return refusal
    if decision.leader_epoch < current.leader_epoch:
        return Refusal(
            ErrorCode.FENCED_LEADER_EPOCH,
            f"leader epoch {decision.leader_epoch} < held {current.leader_epoch}",
        )
    if decision.leader_epoch == current.leader_epoch:
        return _same_leader_epoch(current, decision)
    # The bound's test inline, its refusal in fencing.py: this runs for thousands of partitions per failover.
    if decision.leader_epoch - current.leader_epoch > LEADER_EPOCH_JUMP_MAX and current.leader_epoch != NO_LEADER_EPOCH:
        return check_leader_epoch_jump(decision.leader_epoch, current.leader_epoch)
    return _new_leader_epoch(current, decision)


def apply_stop_replica(current: PartitionState, leader_epoch: int, delete: bool) -> PartitionOutcome:
    """Decide a StopReplica at the partition's current `leader_epoch` (never -1: see the module docstring)."""
    if leader_epoch < 0:
        return Refusal(
            ErrorCode.INVALID_REQUEST,
            f"StopReplica names leader epoch {leader_epoch}: it must name the partition's current leader epoch "
            f"(0 or more); a stop at any epoch is not accepted",
        )
    if current.role is ReplicaRole.STOPPED:
        return Unchanged(current, "already stopped")
    if leader_epoch < current.leader_epoch:
        return Refusal(
            ErrorCode.FENCED_LEADER_EPOCH,
            f"stop at leader epoch {leader_epoch} < held {current.leader_epoch}",
        )
    jump = check_leader_epoch_jump(leader_epoch, current.leader_epoch)
    if jump is not None:
        return jump
    check_transition(current.role, ReplicaRole.STOPPED)
    effects: list[Effect] = []
    if current.role is ReplicaRole.FOLLOWER:
        effects.append(STOP_FETCHER)
    effects.append(COMPLETE_DELAYED_OPERATIONS)
    if delete:
        effects.append(DeleteLog())
    stopped = current._replace(role=ReplicaRole.STOPPED)
    return Applied(stopped, current, ChangeKind.STOP, tuple(effects))


def _refuse_malformed(decision: LeaderAndIsrDecision, broker_id: int) -> Refusal | None:
    replicas = set(decision.replicas)
    if broker_id not in replicas:
        return Refusal(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"broker {broker_id} is not assigned {decision.topic_partition}",
        )
    if decision.leader_epoch < 0 or decision.partition_epoch < 0:
        return Refusal(ErrorCode.INVALID_REQUEST, "negative leader or partition epoch")
    if not set(decision.isr) <= replicas:
        return Refusal(ErrorCode.INVALID_REQUEST, f"ISR {decision.isr} not within {decision.replicas}")
    if decision.leader_id != NO_LEADER and decision.leader_id not in decision.isr:
        return Refusal(ErrorCode.INVALID_REQUEST, f"leader {decision.leader_id} not in ISR {decision.isr}")
    return None


def _same_leader_epoch(current: PartitionState, decision: LeaderAndIsrDecision) -> PartitionOutcome:
    if decision.partition_epoch < current.partition_epoch:
        return Refusal(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"partition epoch {decision.partition_epoch} < held {current.partition_epoch}",
        )
    if decision.partition_epoch == current.partition_epoch:
        return Unchanged(current, "decision already applied")
    if decision.leader_id != current.leader_id:
        return Refusal(ErrorCode.INVALID_REQUEST, "leader changed without a new leader epoch")
    check_transition(current.role, current.role)
    updated = current._replace(isr=tuple(decision.isr), partition_epoch=decision.partition_epoch,
                               replicas=tuple(decision.replicas), adding=tuple(decision.adding))
    effects: tuple[Effect, ...] = (COMPLETE_DELAYED_OPERATIONS,) if current.is_leader else ()
    return Applied(updated, current, ChangeKind.ISR_UPDATE, effects)


def _new_leader_epoch(current: PartitionState, decision: LeaderAndIsrDecision) -> Applied:
    role, change = _role_for(decision, current.broker_id)
    check_transition(current.role, role)
    effects: list[Effect] = []
    if current.role is ReplicaRole.FOLLOWER:
        effects.append(STOP_FETCHER)
    if role is ReplicaRole.LEADER:
        effects.append(AssignLeaderEpochStart(decision.leader_epoch))
    elif role is ReplicaRole.FOLLOWER:
        effects.append(StartFetcher(decision.leader_id, decision.leader_epoch))
    effects.append(COMPLETE_DELAYED_OPERATIONS)
    state = PartitionState(
        topic_partition=current.topic_partition,
        broker_id=current.broker_id,
        role=role,
        leader_id=decision.leader_id,
        leader_epoch=decision.leader_epoch,
        isr=tuple(decision.isr),
        partition_epoch=decision.partition_epoch,
        replicas=tuple(decision.replicas),
        adding=tuple(decision.adding),
    )
    return Applied(state, current, change, tuple(effects))


def _role_for(decision: LeaderAndIsrDecision, broker_id: int) -> tuple[ReplicaRole, ChangeKind]:
    if decision.leader_id == broker_id:
        return ReplicaRole.LEADER, ChangeKind.BECOME_LEADER
    if decision.leader_id == NO_LEADER:
        return ReplicaRole.OFFLINE, ChangeKind.GO_OFFLINE
    return ReplicaRole.FOLLOWER, ChangeKind.BECOME_FOLLOWER
