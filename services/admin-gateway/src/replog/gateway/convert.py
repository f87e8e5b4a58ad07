"""Protobuf <-> domain values; no decisions here."""

from __future__ import annotations

from typing import Iterable, Mapping

from replog.gateway.core.health import Filter
from replog.gateway.core.topics import AssignmentEntry, PartitionDescription, TopicDescription
from replog.v1 import admin_pb2, common_pb2

FILTERS = {
    admin_pb2.PARTITION_FILTER_UNSPECIFIED: Filter.NONE,
    admin_pb2.PARTITION_FILTER_UNDER_REPLICATED: Filter.UNDER_REPLICATED,
    admin_pb2.PARTITION_FILTER_UNAVAILABLE: Filter.UNAVAILABLE,
    admin_pb2.PARTITION_FILTER_UNDER_MIN_ISR: Filter.UNDER_MIN_ISR,
    admin_pb2.PARTITION_FILTER_AT_MIN_ISR: Filter.AT_MIN_ISR,
}


def entries(assignments: Iterable[admin_pb2.ReplicaAssignment]) -> tuple[AssignmentEntry, ...]:
    return tuple((a.topic, a.partition, tuple(a.replicas)) for a in assignments)


def topic_partitions(partitions: Iterable[common_pb2.TopicPartition]) -> list[tuple[str, int]]:
    return [(tp.topic, tp.partition) for tp in partitions]


def assignment_list(by_partition: Mapping[tuple[str, int], Iterable[int]]) -> list[admin_pb2.ReplicaAssignment]:
    return [admin_pb2.ReplicaAssignment(topic=t, partition=p, replicas=list(by_partition[(t, p)]))
            for t, p in sorted(by_partition)]


def topic_assignment_list(topic: str, by_partition: Mapping[int, Iterable[int]]) -> list[admin_pb2.ReplicaAssignment]:
    return assignment_list({(topic, p): r for p, r in by_partition.items()})


def partition_description(d: PartitionDescription) -> admin_pb2.PartitionDescription:
    h = d.health
    return admin_pb2.PartitionDescription(
        topic=d.topic, partition=d.partition, leader=h.leader, leader_epoch=h.leader_epoch,
        replicas=d.replicas, isr=h.isr, adding_replicas=d.adding_replicas, removing_replicas=d.removing_replicas,
        offline_replicas=h.offline_replicas, unavailable=h.unavailable, under_replicated=h.under_replicated,
        under_min_isr=h.under_min_isr, at_min_isr=h.at_min_isr,
    )


def topic_description(d: TopicDescription) -> admin_pb2.TopicDescription:
    return admin_pb2.TopicDescription(
        name=d.name, configs=d.configs, deleting=d.deleting,
        partitions=[partition_description(p) for p in d.partitions],
    )
