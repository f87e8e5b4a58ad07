"""What to create when a cluster has no offsets topic yet: its replica assignment and its configs.

The first FindCoordinator that finds no offsets topic asks for one (offsets_topic.py writes it where
the gateway writes a new topic, and the controller creates its partitions from there). The partition
count is the configured one (it never changes afterwards: placement.py maps groups by it). The
replication factor is the configured one capped at the live brokers, so a small dev cluster still
gets a topic; the plan says when it capped, for a log line. Racks are used when every live broker
has one, as in topic creation, and ignored otherwise rather than refusing.

The topic is compacted and never aged out (cleanup.policy=compact, retention.ms=-1): a committed
offset or a group's snapshot must not leave the log while the group still relies on it, and the log
cleaner keeps only the latest record of each key (records.py keys them by group, and by group, topic
and partition), so the topic stops growing under a steady commit load; a deleted group's tombstones
go after delete.retention.ms.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Mapping

from replog.common.core import placement

OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "retention.ms": "-1"}


@dataclass(frozen=True)
class OffsetsTopicPlan:
    assignment: dict[int, tuple[int, ...]]
    configs: Mapping[str, str]
    replication_factor: int
    replication_factor_asked: int

    @property
    def capped(self) -> bool:
        return self.replication_factor < self.replication_factor_asked


def plan_offsets_topic(live_racks: Mapping[int, str | None], partitions: int, replication_factor: int,
                       rng: random.Random, *, segment_bytes: int | None = None) -> OffsetsTopicPlan | None:
    """The topic to create over `live_racks` (broker id -> rack or None); None with no live broker.
    `segment_bytes`: its segment.bytes (the broker's offsets_topic_segment_bytes), None for the default."""
    assert partitions > 0 and replication_factor > 0, (partitions, replication_factor)
    if not live_racks:
        return None
    factor = min(replication_factor, len(live_racks))
    racks = dict(live_racks) if all(live_racks.values()) else {b: None for b in live_racks}
    assignment = placement.assign_replicas_to_brokers(racks, partitions, factor, rng)
    configs = dict(OFFSETS_TOPIC_CONFIGS)
    if segment_bytes is not None:
        configs["segment.bytes"] = str(segment_bytes)
    return OffsetsTopicPlan(dict(assignment), configs, factor, replication_factor)
