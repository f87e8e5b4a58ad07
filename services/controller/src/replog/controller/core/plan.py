"""Plan: what one decision asks the world to do.

Theory of operation
-------------------
``decide(state, event, rng)`` returns a :class:`Plan` and changes nothing
(KRaft's ``generateRecordsAndResult``).  The executor carries it out
in this order:

1. ``zk_writes`` -- in the order given, in batched ZooKeeper ``multi``s that each
   also check the ``/controller_epoch`` version (KAFKA-6082), so a controller
   that lost its seat writes nothing.  The order is crash-safe (partition
   states, then assignments, then request clean-up and deletions): if the
   executor stops between two ``multi``s, every ISR is still inside its
   assignment and a new controller resumes from what was written.  ``SetPartitionState`` is additionally
   conditional on the znode version ``expected_partition_epoch``; a failed
   check means another writer exists -- the controller must resign, not retry.
2. ``apply(state, plan)`` -- the next in-memory state (``apply.py``); it replays
   ``state_updates`` (facts only the controller keeps) and then ``zk_writes``.
3. Broker requests, one of each kind per broker, sent in parallel across
   brokers and, to one broker, in the order LeaderAndIsr, UpdateMetadata,
   StopReplica.  A plan never both starts and stops the same replica.

   The first wave: a plan that writes only existing partitions' states and
   moves some leaderships (a broker failure, a controlled shutdown, an
   election) orders the new leader epochs first (``first_wave_writes`` of
   them) and carries their LeaderAndIsr apart (``first_wave``, at most one
   per broker), with an UpdateMetadata of the same partitions to every live
   broker (``first_wave_metadata``): clients learn leaders from any broker's
   Metadata, and otherwise would find the new ones only once the whole plan
   went out. The executor sends it as soon as those writes are done, and
   writes the ISR-only changes -- twice as many after a broker failure -- once
   the brokers have taken it (within a bounded head start); everything else
   waits for step 2 as usual. A partition without a leader serves nothing at
   all; one whose ISR still names a dead follower serves reads and acks=0/1
   writes, and only its acks=all writes wait (its HW cannot pass the dead
   replica), so the leaderless go first. Holding the ISR-only changes back
   longer, until the new leaders were writable, was tried: 0.35 s and 0.8 s
   gave no measurable gain at 10K partitions, only a longer wait for those writes.
   The plan's UpdateMetadata repeats the first wave's partitions; a broker that
   answered the first wave gets it without them (``without_delivered``).
4. ``reply`` to the RPC that caused the event, if any.
5. ``follow_ups`` back onto the controller's queue.

``metrics`` are facts for the metrics adapter (docs/metrics.md): counts of what this
plan did and the offline-partition count after it.

Broker requests are value objects that map one to one onto
``broker_control.proto``; the executor adds ``controller_id`` /
``controller_epoch`` and the leaders' endpoints from the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from .errors import ErrorCode
from .model import (
    BrokerInfo,
    ControllerState,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
)
from .topic_config import TopicConfig

if TYPE_CHECKING:
    from .events import Event


# --- ZooKeeper writes (persisted by the executor, then replayed by apply) -----


# The two partition-state writes are NamedTuples, not dataclasses, because a
# failover makes one per partition (100K) and a NamedTuple is built about three
# times faster; they are just as immutable.


class CreatePartitionState(NamedTuple):
    """Create ``/brokers/topics/<t>/partitions/<p>/state`` (and its parent) at version 0."""

    partition: TopicPartition
    state: LeaderAndIsr


class SetPartitionState(NamedTuple):
    """Overwrite a state znode if its version is still ``expected_partition_epoch``."""

    partition: TopicPartition
    state: LeaderAndIsr
    expected_partition_epoch: int


@dataclass(frozen=True, slots=True)
class SetAssignment:
    """Rewrite ``/brokers/topics/<topic>``: every partition of the topic, with
    the KIP-455 ``adding_replicas`` / ``removing_replicas`` maps."""

    topic: str
    assignment: Mapping[int, ReplicaAssignment]


@dataclass(frozen=True, slots=True)
class DeleteTopicZnodes:
    """Delete the topic: ``/brokers/topics/<topic>`` with its partition and state
    children (``partitions`` lists them), ``/config/topics/<topic>`` and
    ``/admin/delete_topics/<topic>``.  Absent znodes are not an error."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ClearReassignment:
    """Remove these partitions from ``/admin/reassign_partitions`` (delete it when empty)."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class DeleteAdminRequest:
    """Delete the handled request znode ``/admin/<name>`` (absent is not an error)."""

    name: str


ZkWrite = (
    CreatePartitionState
    | SetPartitionState
    | SetAssignment
    | DeleteTopicZnodes
    | ClearReassignment
    | DeleteAdminRequest
)


# --- State updates (controller memory only; not written anywhere) -------------


@dataclass(frozen=True, slots=True)
class LoadState:
    """Replace the whole state (Startup); always the first update of its plan."""

    state: ControllerState


@dataclass(frozen=True, slots=True)
class SetLiveBrokers:
    live: Mapping[int, BrokerInfo]


@dataclass(frozen=True, slots=True)
class SetShuttingDown:
    """The new set of brokers in controlled shutdown."""

    broker_ids: frozenset[int]


@dataclass(frozen=True, slots=True)
class LearnPartitions:
    """Partitions whose assignment is already in ZooKeeper (written by the gateway)."""

    topic: str
    assignment: Mapping[int, ReplicaAssignment]


@dataclass(frozen=True, slots=True)
class SetTopicConfig:
    topic: str
    config: TopicConfig


@dataclass(frozen=True, slots=True)
class SetDeletionPending:
    """Mark ``topic`` as being deleted, awaiting these ``(partition, broker_id)`` replicas."""

    topic: str
    pending: frozenset[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class SetReassignment:
    """Track a reassignment's target replicas; ``None`` forgets it."""

    partition: TopicPartition
    target: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class SetLastRebalanceCheck:
    now_ms: int


StateUpdate = (
    LoadState
    | SetLiveBrokers
    | SetShuttingDown
    | LearnPartitions
    | SetTopicConfig
    | SetDeletionPending
    | SetReassignment
    | SetLastRebalanceCheck
)


# --- Broker requests (broker_control.proto) -----------------------------------


class PartitionDecision(NamedTuple):
    """One partition of a LeaderAndIsr / UpdateMetadata request (proto ``PartitionState``).

    A NamedTuple because failover builds one per changed partition (100K) and
    shares it between every broker that receives it.
    """

    partition: TopicPartition
    state: LeaderAndIsr
    assignment: ReplicaAssignment
    is_new: bool


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    """Every decision for one broker; ``init`` lists *all* its replicas (the broker
    stops and deletes local replicas not listed)."""

    broker_id: int
    broker_epoch: int
    init: bool
    partitions: tuple[PartitionDecision, ...]


class StopReplicaPartition(NamedTuple):
    partition: TopicPartition
    leader_epoch: int  # -1: any epoch (topic deletion)
    delete: bool


@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    broker_id: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]


@dataclass(frozen=True, slots=True)
class UpdateMetadata:
    """The same metadata to every broker in ``broker_ids``; ``full`` replaces the
    brokers' caches (``partitions`` is then every partition of the cluster)."""

    broker_ids: tuple[int, ...]
    live_brokers: tuple[BrokerInfo, ...]
    partitions: tuple[PartitionDecision, ...]
    deleted_topics: tuple[str, ...]
    full: bool


# --- Replies to the RPC that caused the event ---------------------------------


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    """``state`` is the committed state when accepted, the current one when refused
    (``None`` for an unknown partition)."""

    partition: TopicPartition
    error: ErrorCode
    message: str
    state: LeaderAndIsr | None


@dataclass(frozen=True, slots=True)
class AlterPartitionReply:
    error: ErrorCode
    message: str
    results: tuple[AlterPartitionResult, ...]


@dataclass(frozen=True, slots=True)
class ControlledShutdownReply:
    """``remaining``: replicated partitions the broker still leads (no other candidate)."""

    error: ErrorCode
    message: str
    remaining: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: TopicPartition
    error: ErrorCode
    message: str = ""


@dataclass(frozen=True, slots=True)
class PartitionResultsReply:
    """Per-partition outcome of an election or reassignment request."""

    results: tuple[PartitionResult, ...]


Reply = AlterPartitionReply | ControlledShutdownReply | PartitionResultsReply


# --- The plan -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanMetrics:
    leader_elections: int = 0
    unclean_leader_elections: int = 0
    isr_shrinks: int = 0
    isr_expands: int = 0
    failed_isr_updates: int = 0
    partitions_moved: int = 0
    offline_partitions: int = 0


@dataclass(frozen=True, slots=True)
class Plan:
    zk_writes: tuple[ZkWrite, ...] = ()
    # The first `first_wave_writes` writes are new leader epochs; once they are written,
    # `first_wave` (their LeaderAndIsr) may go out before the rest is written.
    first_wave_writes: int = 0
    first_wave: tuple[LeaderAndIsrRequest, ...] = ()
    first_wave_metadata: tuple[UpdateMetadata, ...] = ()  # the first wave's partitions, to every live broker
    state_updates: tuple[StateUpdate, ...] = ()
    leader_and_isr: tuple[LeaderAndIsrRequest, ...] = ()
    update_metadata: tuple[UpdateMetadata, ...] = ()
    stop_replica: tuple[StopReplicaRequest, ...] = ()
    reply: Reply | None = None
    follow_ups: tuple[Event, ...] = ()
    metrics: PlanMetrics = field(default_factory=PlanMetrics)


def without_delivered(
    updates: tuple[UpdateMetadata, ...], delivered: tuple[UpdateMetadata, ...], took_delivered: frozenset[int]
) -> tuple[UpdateMetadata, ...]:
    """The plan's UpdateMetadata less what the first wave already delivered.

    The plan's own UpdateMetadata repeats the first wave's partitions (see ``Plan``): a
    broker that missed the first wave must still hear of them. A broker in
    ``took_delivered`` answered the first wave: its copy leaves out every decision
    ``delivered`` carried (the same decision, not merely the same partition). After a
    10K-partition broker failure that is a third of what each survivor would otherwise
    apply again while its new leaderships catch up.
    """
    carried = {d.partition: d for update in delivered for d in update.partitions}
    if not carried or not took_delivered:
        return updates
    out: list[UpdateMetadata] = []
    for update in updates:
        slimmed = tuple(b for b in update.broker_ids if b in took_delivered)
        if update.full or not slimmed:
            out.append(update)
            continue
        rest = tuple(b for b in update.broker_ids if b not in took_delivered)
        if rest:
            out.append(UpdateMetadata(rest, update.live_brokers, update.partitions, update.deleted_topics, False))
        partitions = tuple(d for d in update.partitions if carried.get(d.partition) is not d)
        out.append(UpdateMetadata(slimmed, update.live_brokers, partitions, update.deleted_topics, False))
    return tuple(out)
