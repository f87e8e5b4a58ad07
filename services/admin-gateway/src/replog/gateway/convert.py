"""Protobuf <-> domain values; no decisions here."""

from __future__ import annotations

from typing import Iterable, Mapping

from replog.common.acls.core.model import AclBinding, AclFilter
from replog.common.topic_admin.core.health import Filter
from replog.common.topic_admin.core.topics import AssignmentEntry, PartitionDescription, TopicDescription
from replog.gateway.core.config_entries import BROKER_DEFAULT, DEFAULT, TOPIC_OVERRIDE
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
        under_min_isr=h.under_min_isr, at_min_isr=h.at_min_isr, unclean_leader=h.unclean_leader, elr=h.elr,
    )


def topic_description(d: TopicDescription) -> admin_pb2.TopicDescription:
    return admin_pb2.TopicDescription(
        name=d.name, configs=d.configs, deleting=d.deleting,
        partitions=[partition_description(p) for p in d.partitions],
    )


_CONFIG_SOURCES = {TOPIC_OVERRIDE: admin_pb2.CONFIG_SOURCE_TOPIC_OVERRIDE,
                   BROKER_DEFAULT: admin_pb2.CONFIG_SOURCE_BROKER_DEFAULT, DEFAULT: admin_pb2.CONFIG_SOURCE_DEFAULT}


def config_entries(entries: Iterable[tuple[str, str, str]]) -> list[admin_pb2.ConfigEntry]:
    return [admin_pb2.ConfigEntry(name=name, value=value, source=_CONFIG_SOURCES[source])
            for name, value, source in entries]


# --- ACLs: enum values <-> the ACL model's words ("ACL_OPERATION_CLUSTER_ADMIN" <-> "cluster_admin") ---

_ACL_ENUMS = (("resource_type", admin_pb2.AclResourceType, "ACL_RESOURCE_TYPE_"),
              ("pattern_type", admin_pb2.AclPatternType, "ACL_PATTERN_TYPE_"),
              ("operation", admin_pb2.AclOperation, "ACL_OPERATION_"),
              ("permission", admin_pb2.AclPermission, "ACL_PERMISSION_"))


def _acl_word(enum, prefix: str, number: int) -> str:
    """'' for UNSPECIFIED; the number itself for one the contract does not name (refused by validation)."""
    try:
        name = enum.Name(number)
    except ValueError:
        return str(number)
    return "" if name.endswith("_UNSPECIFIED") else name.removeprefix(prefix).lower()


def acl_binding(message: admin_pb2.AclBinding) -> AclBinding:
    words = {field: _acl_word(enum, prefix, getattr(message, field)) for field, enum, prefix in _ACL_ENUMS}
    return AclBinding(principal=message.principal, resource_name=message.resource_name, **words)


def acl_filter(message: admin_pb2.AclBindingFilter) -> AclFilter:
    words = {field: _acl_word(enum, prefix, getattr(message, field)) or None for field, enum, prefix in _ACL_ENUMS}
    return AclFilter(principal=message.principal or None, resource_name=message.resource_name or None, **words)


def acl_binding_message(binding: AclBinding) -> admin_pb2.AclBinding:
    numbers = {field: enum.Value(prefix + getattr(binding, field).upper()) for field, enum, prefix in _ACL_ENUMS}
    return admin_pb2.AclBinding(principal=binding.principal, resource_name=binding.resource_name, **numbers)
