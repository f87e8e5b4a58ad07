"""The controller's picture of the cluster: value types and the state they form.

Theory of operation
-------------------
Everything here is a value.  :class:`ControllerState` is the controller's cache of
ZooKeeper (docs/zookeeper.md) plus the few facts only the active controller knows (which
brokers asked for a controlled shutdown, which deleted replicas are still being
stopped).  ``decide()`` reads a state and never changes it; ``apply()`` builds the
next one (``apply.py``).  The mappings inside a state are plain dicts for speed
and are *treated* as immutable: code that builds a new state copies what it
changes (copy on write) and shares the rest.

Invariants of a state (checked by the simulation after every step):

* every partition with a state has an assignment, ``isr`` is non-empty and a
  subset of the assignment, and ``leader`` is ``NO_LEADER`` or a member of ``isr``;
  ``elr`` is inside the assignment and shares no member with ``isr``;
* ``partition_epoch`` is the version of the partition's state znode, so it rises
  by exactly one with every write the controller makes;
* ``partitions_by_broker`` and ``partitions_by_topic`` index ``assignments``
  exactly (every replica of the full assignment, adding and removing included),
  and ``offline_partition_count`` counts the states whose leader is ``NO_LEADER``.

The indexes exist so that a broker failure costs O(partitions on that broker),
not O(partitions x brokers): the 100K-partition target in the controller issue.

``TopicPartition``, ``LeaderAndIsr`` and ``ReplicaAssignment`` -- the three
types there are 100K of -- are ``NamedTuple``s rather than frozen dataclasses,
on purpose: a tuple's hash and equality run in C, where a dataclass makes a
Python call on every dict lookup, and a tuple is cheaper to build
(docs/perf/controller-state-values.md).  They are just as immutable and keep
their field names; the cost is that they also behave as tuples (compare equal
to plain tuples, unpack).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from replog.common.core.partitions import NO_LEADER, TopicPartition
from replog.common.core.topic_config import MIN_INSYNC_REPLICAS, TopicConfig


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A registered broker: the content of its ephemeral ``/brokers/ids/<id>`` znode.

    ``broker_epoch`` is the registration's identity (the znode's czxid): a broker
    that restarts registers again with a larger one.
    """

    broker_id: int
    host: str
    port: int
    rack: str | None = None
    broker_epoch: int = 0
    # Partitions whose committed records the broker lost in an unclean shutdown and has not fetched
    # again yet: it leads them only when no other ISR member can (election.py).
    lost_partitions: frozenset[TopicPartition] = frozenset()
    # Replicas in log directories the broker reported offline (LogDirsOffline, issue 40): in no ISR and
    # leading nowhere while this registration stands.
    offline_partitions: frozenset[TopicPartition] = frozenset()
    # The broker started without the clean-shutdown marker: it leaves every ELR when it registers (elr.py).
    unclean_start: bool = False
    # Its `min_insync_replicas`: what its leaders enforce for topics without their own (elr.py takes the lowest).
    min_insync_replicas_default: int = 1
    # Port of its Kafka listener (0: none), passed on to the brokers' metadata for Kafka clients.
    kafka_port: int = 0

    def serves(self, tp: TopicPartition) -> bool:
        """False while the broker's replica of `tp` is in an offline log directory."""
        return not self.offline_partitions or tp not in self.offline_partitions


@dataclass(frozen=True, slots=True)
class TopicElectionConfig:
    """What the controller keeps of a topic's ``/config/topics`` entry: the two settings that decide who may lead.

    ``min_insync_replicas`` is ``None`` when the entry does not set it: the topic's leaders then enforce
    their broker's default, and the ELR rules take the lowest default of the live brokers (elr.py).
    """

    unclean_leader_election: bool = False
    min_insync_replicas: int | None = None

    @classmethod
    def from_map(cls, configs: Mapping[str, str]) -> TopicElectionConfig:
        """From the entry's ``str -> str`` map; an invalid map raises as ``TopicConfig.from_map`` does."""
        parsed = TopicConfig.from_map(configs)
        own = parsed.min_insync_replicas if MIN_INSYNC_REPLICAS in configs else None
        return cls(parsed.unclean_leader_election, own)


class LeaderAndIsr(NamedTuple):
    """The partition state znode ``/brokers/topics/<t>/partitions/<p>/state``.

    ``leader_epoch`` rises whenever the leader changes; ``partition_epoch`` is
    the znode's version and rises with every write; ``controller_epoch`` is the
    epoch of the controller that wrote it.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    partition_epoch: int
    # The leader epoch an unclean election began, -1 if none did: kept by every later write.
    unclean_leader_epoch: int = -1
    # Eligible leader replicas (KIP-966, elr.py): outside the ISR, but holding every committed record.
    elr: tuple[int, ...] = ()


class ReplicaAssignment(NamedTuple):
    """Assigned replicas of a partition in preference order (KIP-455 shape).

    While a reassignment runs, ``replicas`` is the full set RAR + OAR,
    ``adding`` = RAR - OAR and ``removing`` = OAR - RAR.
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def preferred(self) -> int:
        """The preferred leader: the first assigned replica."""
        return self.replicas[0]

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """OAR: the replicas before the reassignment began (full set minus adding)."""
        return tuple(b for b in self.replicas if b not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        """RAR: the replicas the reassignment moves to (full set minus removing)."""
        return tuple(b for b in self.replicas if b not in self.removing)


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Process configuration of the controller (not stored in ZooKeeper)."""

    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_ms: int = 300_000


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """What a newly elected controller read from ZooKeeper (seed D; docs/architecture.md, "Who holds the seat").

    ``assignments`` carries each partition's full assignment with its KIP-455
    adding/removing replicas; ``reassignment_requests`` is the content of
    ``/admin/reassign_partitions`` (``None`` cancels); ``topics_being_deleted``
    the children of ``/admin/delete_topics``.
    """

    controller_id: int
    controller_epoch: int
    live_brokers: Mapping[int, BrokerInfo]
    assignments: Mapping[TopicPartition, ReplicaAssignment]
    partition_states: Mapping[TopicPartition, LeaderAndIsr]
    topic_configs: Mapping[str, TopicElectionConfig] = field(default_factory=dict)
    topics_being_deleted: frozenset[str] = frozenset()
    reassignment_requests: Mapping[TopicPartition, tuple[int, ...] | None] = field(
        default_factory=dict
    )


_DEFAULT_TOPIC_CONFIG = TopicElectionConfig()


@dataclass(frozen=True, slots=True)
class ControllerState:
    """The controller's whole view; see the module docstring for its invariants.

    ``topics_being_deleted`` maps a topic marked for deletion to the replicas
    ``(partition, broker_id)`` whose StopReplica(delete) is not acknowledged yet.
    ``reassignments`` maps a partition being reassigned to its target replicas.
    ``partitions_by_broker`` maps a broker id to the partitions it holds a
    replica of, as an insertion-ordered set (dict keys, values ``None``) so that
    iteration order, and so every plan, is reproducible.
    """

    controller_id: int
    controller_epoch: int
    live_brokers: Mapping[int, BrokerInfo]
    assignments: Mapping[TopicPartition, ReplicaAssignment]
    partition_states: Mapping[TopicPartition, LeaderAndIsr]
    topic_configs: Mapping[str, TopicElectionConfig]
    topics_being_deleted: Mapping[str, frozenset[tuple[int, int]]]
    reassignments: Mapping[TopicPartition, tuple[int, ...]]
    shutting_down_brokers: frozenset[int]
    settings: ControllerSettings
    last_rebalance_check_ms: int | None
    partitions_by_broker: Mapping[int, Mapping[TopicPartition, None]]
    partitions_by_topic: Mapping[str, tuple[int, ...]]
    offline_partition_count: int

    @classmethod
    def build(
        cls,
        *,
        controller_id: int = -1,
        controller_epoch: int = 0,
        live_brokers: Mapping[int, BrokerInfo] | None = None,
        assignments: Mapping[TopicPartition, ReplicaAssignment] | None = None,
        partition_states: Mapping[TopicPartition, LeaderAndIsr] | None = None,
        topic_configs: Mapping[str, TopicElectionConfig] | None = None,
        topics_being_deleted: Mapping[str, frozenset[tuple[int, int]]] | None = None,
        reassignments: Mapping[TopicPartition, tuple[int, ...]] | None = None,
        shutting_down_brokers: Iterable[int] = (),
        settings: ControllerSettings | None = None,
        last_rebalance_check_ms: int | None = None,
    ) -> ControllerState:
        """A state with its indexes computed; partitions are indexed in sorted order."""
        assignments = dict(sorted((assignments or {}).items()))
        partition_states = dict(partition_states or {})
        by_broker: dict[int, dict[TopicPartition, None]] = {}
        by_topic: dict[str, list[int]] = {}
        for tp, assignment in assignments.items():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
            for broker_id in assignment.replicas:
                by_broker.setdefault(broker_id, {})[tp] = None
        offline = sum(1 for s in partition_states.values() if s.leader == NO_LEADER)
        return cls(
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            live_brokers=dict(live_brokers or {}),
            assignments=assignments,
            partition_states=partition_states,
            topic_configs=dict(topic_configs or {}),
            topics_being_deleted=dict(topics_being_deleted or {}),
            reassignments=dict(reassignments or {}),
            shutting_down_brokers=frozenset(shutting_down_brokers),
            settings=settings or ControllerSettings(),
            last_rebalance_check_ms=last_rebalance_check_ms,
            partitions_by_broker=by_broker,
            partitions_by_topic={t: tuple(ps) for t, ps in by_topic.items()},
            offline_partition_count=offline,
        )

    @classmethod
    def empty(cls, settings: ControllerSettings | None = None) -> ControllerState:
        """The state of a controller that has not taken its seat yet."""
        return cls.build(settings=settings)

    def config_of(self, topic: str) -> TopicElectionConfig:
        """The topic's config (defaults when it has none of its own)."""
        return self.topic_configs.get(topic, _DEFAULT_TOPIC_CONFIG)

    def eligible_broker_ids(self) -> frozenset[int]:
        """Live brokers that may lead or join an ISR: not in controlled shutdown."""
        return frozenset(self.live_brokers) - self.shutting_down_brokers

    def partitions_of(self, topic: str) -> tuple[TopicPartition, ...]:
        return tuple(TopicPartition(topic, p) for p in self.partitions_by_topic.get(topic, ()))
