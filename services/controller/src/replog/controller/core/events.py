"""Events: everything that can make the controller decide something.

Theory of operation
-------------------
One event loop (docs/architecture.md, "From an admin request to the brokers"): ZooKeeper
watches, broker RPCs, the executor and timers only *enqueue* one of these frozen values; the single controller loop
takes them one at a time and calls ``decide(state, event, rng)``.  An event says
what happened, in domain terms, with the data already read (a watch adapter
reads the znode before it enqueues).  Events the controller makes for itself
(``IsrChanged`` after an accepted AlterPartition) come back through
``Plan.follow_ups`` and the same queue.

Every handler is idempotent where ZooKeeper can deliver the same news twice
(watches re-fire after the controller's own writes): a topic already known, a
reassignment already running to the same target, a broker set that did not
change all decide nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from replog.common.core.partitions import TopicPartition

from .model import BrokerInfo, ClusterSnapshot, TopicElectionConfig


@dataclass(frozen=True, slots=True)
class Startup:
    """This controller took its seat and read the whole cluster (seed D)."""

    snapshot: ClusterSnapshot


@dataclass(frozen=True, slots=True)
class BrokersChanged:
    """``/brokers/ids`` changed: ``live`` is every registered broker now (seed A).

    A broker present before and now but with another ``broker_epoch`` restarted
    in between; it is handled as a death followed by a return.
    """

    live: Mapping[int, BrokerInfo]


@dataclass(frozen=True, slots=True)
class TopicsCreated:
    """New children of ``/brokers/topics`` with their assignments (seed B).

    ``assignments`` maps topic -> partition -> replicas; ``configs`` holds the
    topics' ``/config/topics`` entries (defaults when absent).
    """

    assignments: Mapping[str, Mapping[int, tuple[int, ...]]]
    configs: Mapping[str, TopicElectionConfig] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionsAdded:
    """A topic znode changed: ``assignment`` is its partitions (seed H).

    Partitions the controller already knows are ignored, so the adapter may pass
    the whole znode content, including the controller's own reassignment writes.
    """

    topic: str
    assignment: Mapping[int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class TopicDeletionRequested:
    """Children appeared under ``/admin/delete_topics``."""

    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopicDeletionReplicaStopped:
    """A broker answered a StopReplica(delete) for a deleted topic's replicas.

    The executor reports per partition: ``stopped`` succeeded, ``failed`` did not.
    """

    broker_id: int
    stopped: tuple[TopicPartition, ...]
    failed: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class ReassignmentRequested:
    """``/admin/reassign_partitions`` (or the admin API): target replicas per partition.

    ``None`` as a target cancels the partition's reassignment (KIP-455).
    """

    targets: Mapping[TopicPartition, tuple[int, ...] | None]


@dataclass(frozen=True, slots=True)
class IsrChanged:
    """ISRs changed for these partitions: check whether their reassignments can finish."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    """One leader's ISR proposal for one partition.

    ``new_isr_broker_epochs``: the registration epoch of each ``new_isr`` member as the leader saw it in
    that member's fetches, in the same order, 0 when unknown; empty when the leader named none."""

    partition: TopicPartition
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
    new_isr_broker_epochs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionReceived:
    """A leader's AlterPartition RPC; ``broker_epoch`` 0 means the broker did not say."""

    broker_id: int
    broker_epoch: int
    items: tuple[AlterPartitionItem, ...]


@dataclass(frozen=True, slots=True)
class ControlledShutdownRequested:
    """A broker wants to stop and asks for its leaderships to move first; with ``partitions`` it keeps
    running and gives up leadership of just those (a replica its scrubber found damaged, issue 40)."""

    broker_id: int
    broker_epoch: int
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class LogDirsOfflineReported:
    """A broker's log directories failed: its replicas of ``partitions`` are offline (issue 40)."""

    broker_id: int
    broker_epoch: int
    offline_log_dirs: tuple[str, ...]
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class PreferredElectionRequested:
    """Move leadership back to preferred replicas; ``None`` means every partition.

    ``admin_request`` names the ``/admin`` child that carried the request, deleted
    once decided (``None`` when it came another way).
    """

    partitions: tuple[TopicPartition, ...] | None = None
    admin_request: str | None = None


@dataclass(frozen=True, slots=True)
class UncleanElectionRequested:
    """Elect a leader for leaderless partitions even outside the ISR (KIP-460)."""

    partitions: tuple[TopicPartition, ...]
    admin_request: str | None = None


@dataclass(frozen=True, slots=True)
class AutoRebalanceTick:
    """Periodic check of each broker's leader imbalance (docs/operations.md, "Preferred leader election")."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class TopicConfigChanged:
    """``/config/topics/<topic>`` changed; ``config`` is what the controller keeps of it."""

    topic: str
    config: TopicElectionConfig


@dataclass(frozen=True, slots=True)
class BrokerResyncRequested:
    """A request to a live broker failed in transit (deadline, connection): it may have
    missed a decision. It gets its whole state again -- an INIT LeaderAndIsr and full
    metadata, each confirmed by digest first, so a broker that has it all costs two small
    requests. ``broker_epoch`` is the registration the failed request was addressed to."""

    broker_id: int
    broker_epoch: int


Event = (
    Startup
    | BrokersChanged
    | BrokerResyncRequested
    | TopicsCreated
    | PartitionsAdded
    | TopicDeletionRequested
    | TopicDeletionReplicaStopped
    | ReassignmentRequested
    | IsrChanged
    | AlterPartitionReceived
    | ControlledShutdownRequested
    | LogDirsOfflineReported
    | PreferredElectionRequested
    | UncleanElectionRequested
    | AutoRebalanceTick
    | TopicConfigChanged
)
