"""Plan: what one decision asks the world to do.

Theory of operation
-------------------
``decide(state, event, rng)`` returns a :class:`Plan` and changes nothing
(KRaft's ``generateRecordsAndResult``).  A plan holds:

* ZooKeeper writes, in a crash-safe order (partition states, then assignments,
  then request clean-up and deletions): if the executor stops between two
  ``multi``s, every ISR is still inside its assignment and a new controller
  resumes from what was written;
* ``state_updates``: facts only the controller keeps; ``apply(state, plan)``
  replays them, then the writes (``apply.py``);
* broker requests: value objects that map one to one onto ``broker_control.proto``;
  the executor adds ``controller_id`` / ``controller_epoch`` and the leaders'
  endpoints.  A plan never both starts and stops the same replica;
* the reply to the RPC that caused the event, if any, and ``follow_ups`` that
  go back onto the controller's queue once every step is done.

``steps`` (``steps.py``) hold the writes, requests and reply in the order the
executor carries them out; the properties below read them back by kind.
``metrics`` are facts for the metrics adapter (docs/metrics.md): counts of what
this plan did and the offline-partition count after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

from replog.common.core.partitions import TopicPartition

from .errors import ErrorCode
from .model import BrokerInfo, ControllerState, LeaderAndIsr, ReplicaAssignment, TopicElectionConfig
from .steps import Answer, Apply, Send, Step, Write

if TYPE_CHECKING:
    from .events import Event


# --- ZooKeeper writes (persisted by the executor, then replayed by apply) -----


# The two partition-state writes are NamedTuples, not dataclasses, because a
# failover makes one per partition (up to 100K): docs/perf/controller-state-values.md.


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
    config: TopicElectionConfig


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
    leader_epoch: int  # the partition's current one; brokers refuse -1 ("any epoch")
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
class LogDirsOfflineReply:
    error: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: TopicPartition
    error: ErrorCode
    message: str = ""


@dataclass(frozen=True, slots=True)
class PartitionResultsReply:
    """Per-partition outcome of an election or reassignment request."""

    results: tuple[PartitionResult, ...]


Reply = AlterPartitionReply | ControlledShutdownReply | LogDirsOfflineReply | PartitionResultsReply


# --- The plan -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanMetrics:
    leader_elections: int = 0
    unclean_leader_elections: int = 0
    # (partition, leader) elected from ISR members that all lost committed records of it (docs/durability.md)
    lossy_leader_elections: tuple[tuple[TopicPartition, int], ...] = ()
    # The partitions given a leader outside their ISR: records they acknowledged may be lost. The
    # controller names them in its log and its span, so an operator knows where to look.
    unclean_partitions: tuple[TopicPartition, ...] = ()
    isr_shrinks: int = 0
    isr_expands: int = 0
    failed_isr_updates: int = 0
    partitions_moved: int = 0
    offline_partitions: int = 0


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...] = (Apply(), Answer())
    state_updates: tuple[StateUpdate, ...] = ()
    follow_ups: tuple[Event, ...] = ()
    metrics: PlanMetrics = field(default_factory=PlanMetrics)

    @property
    def zk_writes(self) -> tuple[ZkWrite, ...]:
        """Every ZooKeeper write, in the order written (what ``apply`` replays)."""
        writes = [step.writes for step in self.steps if type(step) is Write]
        return writes[0] if len(writes) == 1 else tuple(chain.from_iterable(writes))

    @property
    def sends(self) -> tuple[Send, ...]:
        """The waves of broker requests, in the order sent."""
        return tuple(step for step in self.steps if type(step) is Send)

    @property
    def leader_and_isr(self) -> tuple[LeaderAndIsrRequest, ...]:
        """Every LeaderAndIsr request, in the order sent (a broker may get one per wave)."""
        return tuple(chain.from_iterable(send.leader_and_isr for send in self.sends))

    @property
    def update_metadata(self) -> tuple[UpdateMetadata, ...]:
        return tuple(chain.from_iterable(send.update_metadata for send in self.sends))

    @property
    def stop_replica(self) -> tuple[StopReplicaRequest, ...]:
        return tuple(chain.from_iterable(send.stop_replica for send in self.sends))

    @property
    def reply(self) -> Reply | None:
        return next((step.reply for step in self.steps if type(step) is Answer), None)
