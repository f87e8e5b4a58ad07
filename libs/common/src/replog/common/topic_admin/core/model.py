"""The snapshot of the cluster a decision is taken on.

A :class:`ClusterView` is what one bulk read of ZooKeeper saw: live brokers,
topics (assignment, stored config overrides, partition states, deletion mark),
the pending reassignment request and the throttle. Versions are the znodes'
versions at the read, so the adapter can write back with a version check: if
anything changed since, ZooKeeper refuses the write and nothing is applied.

Version -1 means "the znode did not exist" (create it rather than set it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from replog.common.core.errors import InvalidConfigError
from replog.common.core.topic_config import TopicConfig
from replog.common.zk.schema import BrokerRegistration, PartitionStateRecord, ReassignmentRequest, TopicAssignment

NO_ZNODE = -1


@dataclass(frozen=True)
class TopicView:
    name: str
    assignment: TopicAssignment
    assignment_version: int
    # Overrides as stored in /config/topics/<topic>; the effective values add defaults.
    config_overrides: Mapping[str, str] = field(default_factory=dict)
    config_version: int = NO_ZNODE
    # Partition -> state; a partition missing here has no state znode yet (leader -1, ISR []).
    states: Mapping[int, PartitionStateRecord] = field(default_factory=dict)
    deleting: bool = False

    @property
    def partition_count(self) -> int:
        return len(self.assignment.partitions)

    def config(self) -> TopicConfig:
        return effective_config(self.config_overrides)

    def reassigning(self, partition: int) -> bool:
        return bool(self.assignment.adding_replicas.get(partition) or self.assignment.removing_replicas.get(partition))

    def original_replicas(self, partition: int) -> tuple[int, ...]:
        """The replicas before any reassignment in flight: assigned minus adding (KIP-455)."""
        adding = set(self.assignment.adding_replicas.get(partition, ()))
        return tuple(r for r in self.assignment.partitions[partition] if r not in adding)


@dataclass(frozen=True)
class ClusterView:
    controller_id: int = -1
    controller_epoch: int = 0
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)   # live (registered) only
    topics: Mapping[str, TopicView] = field(default_factory=dict)
    # Every topic name that exists, also those not loaded into `topics`.
    topic_names: frozenset[str] = frozenset()
    deleting_topics: frozenset[str] = frozenset()
    reassignment: ReassignmentRequest | None = None
    reassignment_version: int = NO_ZNODE
    throttle_bytes_per_s: int = 0
    throttle_version: int = NO_ZNODE

    @property
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(self.brokers)

    def known_broker_ids(self) -> frozenset[int]:
        """Registered brokers plus every broker named in a loaded assignment."""
        known = set(self.brokers)
        for topic in self.topics.values():
            for replicas in topic.assignment.partitions.values():
                known.update(replicas)
        return frozenset(known)

    def racks(self) -> dict[int, str | None]:
        return {b: r.rack for b, r in self.brokers.items()}

    def topic(self, name: str) -> TopicView | None:
        return self.topics.get(name)


def effective_config(overrides: Mapping[str, str]) -> TopicConfig:
    """The topic's config; a stored override that no longer parses is skipped, not fatal,
    so one bad znode cannot break describing the whole cluster."""
    try:
        return TopicConfig.from_map(overrides)
    except InvalidConfigError:
        good = {}
        for key, value in overrides.items():
            try:
                TopicConfig.from_map({key: value})
                good[key] = value
            except InvalidConfigError:
                continue
        return TopicConfig.from_map(good)
