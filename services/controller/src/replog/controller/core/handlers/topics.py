"""Topic creation, added partitions and topic config changes (seed B.1, seed H).

Theory of operation
-------------------
The gateway places replicas (``placement.py``) and writes the topic znode; the
controller learns the assignment from the watch and starts the partitions
(NON_EXISTENT -> NEW -> ONLINE): leader = first eligible replica in assignment
order, ISR = every eligible replica, state znode created at version 0, and a
LeaderAndIsr with ``is_new`` to the replicas.  A partition none of whose
replicas is eligible stays NEW (no state znode: an ISR cannot be empty) until a
replica's broker registers (``brokers.py``).

Watches re-fire, so creating a known topic or adding known partitions decides
nothing; nor does anything happen to a topic being deleted.

A config change is stored; when it turns unclean leader election on, the
topic's leaderless partitions get an election at once (as Kafka does).
"""

from __future__ import annotations

from collections.abc import Mapping

from replog.common.core.partitions import NO_LEADER, TopicPartition

from ..builder import PlanBuilder
from ..events import PartitionsAdded, TopicConfigChanged, TopicsCreated
from ..model import ReplicaAssignment
from .leadership import initialize_partition, restore_leadership


def on_topics_created(b: PlanBuilder, event: TopicsCreated) -> None:
    for topic in sorted(event.assignments):
        if b.is_deleting(topic):
            continue
        config = event.configs.get(topic)
        if topic in b.base.partitions_by_topic:
            # Known already (a re-fired watch, or its partitions arrived first): keep the config.
            if config is not None and topic not in b.base.topic_configs:
                on_topic_config_changed(b, TopicConfigChanged(topic, config))
            continue
        if config is not None:
            b.set_config(topic, config)
        _start_partitions(b, topic, event.assignments[topic])


def on_partitions_added(b: PlanBuilder, event: PartitionsAdded) -> None:
    if b.is_deleting(event.topic):
        return
    known = set(b.base.partitions_by_topic.get(event.topic, ()))
    added = {p: r for p, r in event.assignment.items() if p not in known}
    if added:
        _start_partitions(b, event.topic, added)


def on_topic_config_changed(b: PlanBuilder, event: TopicConfigChanged) -> None:
    before = b.config_of(event.topic)
    if event.config == before and event.topic in b.base.topic_configs:
        return
    b.set_config(event.topic, event.config)
    if event.config.unclean_leader_election and not before.unclean_leader_election \
            and not b.is_deleting(event.topic):
        for tp in b.partitions_of_topic(event.topic):
            state = b.state_of(tp)
            if state is not None and state.leader == NO_LEADER:
                restore_leadership(b, tp)


def _start_partitions(b: PlanBuilder, topic: str, assignment: Mapping[int, tuple[int, ...]]) -> None:
    learned = {p: ReplicaAssignment(tuple(assignment[p])) for p in sorted(assignment)}
    b.learn_partitions(topic, learned)
    for partition in learned:
        initialize_partition(b, TopicPartition(topic, partition))
