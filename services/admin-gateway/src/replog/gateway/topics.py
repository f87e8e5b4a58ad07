"""Topic requests: create, delete, list, describe, add partitions, alter configs.

Create and delete are replog.common.topic_admin.writes' (shared with the brokers' Kafka listener).

Each handler reads a snapshot, lets the core decide, and writes the decision in
one version-checked transaction (see zk_writes). The controller takes it from
there: it watches /brokers/topics (creating partition states), the
/admin/delete_topics marks, and /config/topics.
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.common.core.internal_topics import is_internal
from replog.common.topic_admin import writes as topic_writes
from replog.common.topic_admin.core import topics as core
from replog.common.topic_admin.core.refusal import not_found
from replog.common.topic_admin.zk_view import load_view
from replog.common.topic_admin.zk_writes import Conflict, commit, create_or_set, retrying
from replog.common.zk import schema
from replog.gateway import convert
from replog.gateway.core.config_entries import config_entries
from replog.gateway.deps import GatewayDeps
from replog.gateway.log_stats import describe_replicas, leader_replica
from replog.v1 import admin_pb2


def create_topic(deps: GatewayDeps, request: admin_pb2.CreateTopicRequest) -> admin_pb2.CreateTopicResponse:
    spec = core.CreateTopic(
        name=request.name,
        partitions=request.partitions,
        replication_factor=request.replication_factor,
        assignment=convert.entries(request.assignment),
        configs=dict(request.configs),
        start_index=request.start_index if request.HasField("start_index") else None,
        replica_shift=request.replica_shift if request.HasField("replica_shift") else None,
    )
    creation = topic_writes.create_topic(deps.zk, spec, deps.rng, validate_only=request.validate_only)
    return admin_pb2.CreateTopicResponse(
        assignment=convert.topic_assignment_list(creation.name, creation.assignment.partitions),
        configs=creation.effective_configs,
    )


def delete_topic(deps: GatewayDeps, request: admin_pb2.DeleteTopicRequest) -> admin_pb2.DeleteTopicResponse:
    topic_writes.delete_topic(deps.zk, request.name)
    return admin_pb2.DeleteTopicResponse()


def list_topics(deps: GatewayDeps, request: admin_pb2.ListTopicsRequest) -> admin_pb2.ListTopicsResponse:
    view = load_view(deps.connect, topics=())
    names = view.topic_names if request.include_deleting else view.topic_names - view.deleting_topics
    if not request.include_internal:
        names = {name for name in names if not is_internal(name)}
    return admin_pb2.ListTopicsResponse(topics=sorted(names))


def describe_topics(deps: GatewayDeps, request: admin_pb2.DescribeTopicsRequest) -> admin_pb2.DescribeTopicsResponse:
    """The topics from ZooKeeper, with each partition's log start, HW and size and the brokers' config
    defaults asked of the leaders (best effort: -1 and built-in defaults when one does not answer)."""
    names = list(request.names)
    view = load_view(deps.connect, topics=names or None, states=True)
    described = core.describe_topics(view, names, convert.FILTERS[request.filter])
    asked: dict[int, list[tuple[str, int]]] = {}
    for topic in described:
        for p in topic.partitions:
            if p.health.leader in view.brokers:
                asked.setdefault(p.health.leader, []).append((p.topic, p.partition))
    defaults: dict[int, dict[str, str]] = {}
    stats = describe_replicas(deps, view.brokers, asked, defaults) if asked else {}
    replies = []
    for topic in described:
        reply = convert.topic_description(topic)
        for message, p in zip(reply.partitions, topic.partitions):
            found = leader_replica(stats, p.health.leader, (p.topic, p.partition))
            message.log_start_offset, message.high_watermark, message.size_bytes = (
                (found.log_start_offset, found.high_watermark, found.size_bytes) if found else (-1, -1, -1))
        first_leader = next((p.health.leader for p in topic.partitions if p.health.leader in defaults), None)
        overrides = view.topics[topic.name].config_overrides
        reply.config_entries.extend(convert.config_entries(
            config_entries(overrides, defaults.get(first_leader) if first_leader is not None else None)))
        replies.append(reply)
    return admin_pb2.DescribeTopicsResponse(topics=replies)


def create_partitions(
    deps: GatewayDeps, request: admin_pb2.CreatePartitionsRequest
) -> admin_pb2.CreatePartitionsResponse:
    def attempt() -> core.PartitionGrowth:
        view = load_view(deps.connect)
        growth = core.plan_add_partitions(view, request.topic, request.total_count, convert.entries(request.assignment))
        if request.validate_only:
            return growth
        version = view.topics[growth.name].assignment_version
        try:
            deps.kazoo.set(schema.topic_path(growth.name), growth.assignment.encode(), version=version)
        except BadVersionError:
            raise Conflict() from None
        except NoNodeError:
            raise not_found(f"Topic '{growth.name}' does not exist.") from None
        return growth

    growth = retrying(attempt, f"add partitions to '{request.topic}'")
    return admin_pb2.CreatePartitionsResponse(assignment=convert.topic_assignment_list(growth.name, growth.added))


def alter_topic_configs(
    deps: GatewayDeps, request: admin_pb2.AlterTopicConfigsRequest
) -> admin_pb2.AlterTopicConfigsResponse:
    def attempt() -> core.ConfigChange:
        view = load_view(deps.connect, topics=[request.topic])
        change = core.plan_alter_configs(view, request.topic, dict(request.set), list(request.delete))
        tx = deps.kazoo.transaction()
        tx.check(schema.topic_path(change.name), -1)
        config_path = schema.topic_config_path(change.name)
        create_or_set(tx, config_path, change.config.encode(), view.topics[change.name].config_version,
                      deps.zk.acl(config_path))
        try:
            commit(tx)
        except (BadVersionError, NodeExistsError, NoNodeError):
            raise Conflict() from None
        return change

    change = retrying(attempt, f"alter configs of '{request.topic}'")
    return admin_pb2.AlterTopicConfigsResponse(configs=change.effective_configs)
