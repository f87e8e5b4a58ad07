"""Which ACL each AdminService method needs, checked before its handler runs.

Kafka's rules in replog's words: creating a topic needs create on the topic or on the cluster;
deleting one, or its records (DeleteRecords), needs delete, and growing or configuring one alter,
on the topic; describing topics needs describe on each topic named, and a listing of every topic shows only those the
caller may describe. Reading the cluster's state (DescribeCluster, reassignment plans and
progress, the topology export, DescribeAcls, DescribeClientQuotas) needs describe on the cluster; changing it
(reassignments, leader elections, CreateAcls, DeleteAcls, AlterClientQuotas) needs cluster_admin on the cluster.

A refusal answers PERMISSION_DENIED before the handler reads or writes anything
(acls/enforcement.py). Services and super users pass every check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from replog.common.acls.core.model import (
    ALTER,
    CLUSTER,
    CLUSTER_ADMIN,
    CLUSTER_NAME,
    CREATE,
    DELETE,
    DESCRIBE,
    TOPIC,
)
from replog.common.acls.enforcement import Caller, Enforcer

Check = Callable[[Enforcer, "Caller | None", Any], "str | None"]
Trim = Callable[[Enforcer, "Caller | None", Any, Any], Any]


@dataclass(frozen=True)
class Rule:
    check: Check                 # the refusal message, or None to let the handler run
    trim: Trim | None = None     # drops from the answer what the caller may not see


def on_cluster(operation: str) -> Rule:
    return Rule(lambda enforcer, caller, request: enforcer.refusal(caller, operation, CLUSTER, [CLUSTER_NAME]))


def on_topic(operation: str, name_of: Callable[[Any], str]) -> Rule:
    return Rule(lambda enforcer, caller, request: enforcer.refusal(caller, operation, TOPIC, [name_of(request)]))


def _create_topic(enforcer: Enforcer, caller: Caller | None, request) -> str | None:
    if enforcer.allows(caller, CREATE, CLUSTER, CLUSTER_NAME):
        return None
    return enforcer.refusal(caller, CREATE, TOPIC, [request.name])


def _describe_named_topics(enforcer: Enforcer, caller: Caller | None, request) -> str | None:
    return enforcer.refusal(caller, DESCRIBE, TOPIC, list(request.names))


def _visible_topic_names(enforcer: Enforcer, caller: Caller | None, request, response):
    if caller is None:
        return response
    kept = [name for name in response.topics if enforcer.allows(caller, DESCRIBE, TOPIC, name)]
    del response.topics[:]
    response.topics.extend(kept)
    return response


def _visible_topic_descriptions(enforcer: Enforcer, caller: Caller | None, request, response):
    if caller is None or request.names:
        return response  # named topics were checked before the handler ran
    kept = [t for t in response.topics if enforcer.allows(caller, DESCRIBE, TOPIC, t.name)]
    del response.topics[:]
    response.topics.extend(kept)
    return response


RULES: dict[str, Rule] = {
    "CreateTopic": Rule(_create_topic),
    "DeleteTopic": on_topic(DELETE, lambda r: r.name),
    "ListTopics": Rule(lambda enforcer, caller, request: None, _visible_topic_names),
    "DescribeTopics": Rule(_describe_named_topics, _visible_topic_descriptions),
    "CreatePartitions": on_topic(ALTER, lambda r: r.topic),
    "AlterTopicConfigs": on_topic(ALTER, lambda r: r.topic),
    "DescribeCluster": on_cluster(DESCRIBE),
    "GenerateReassignment": on_cluster(DESCRIBE),
    "ExecuteReassignment": on_cluster(CLUSTER_ADMIN),
    "VerifyReassignment": on_cluster(DESCRIBE),
    "CancelReassignment": on_cluster(CLUSTER_ADMIN),
    "ListReassignments": on_cluster(DESCRIBE),
    "ElectLeaders": on_cluster(CLUSTER_ADMIN),
    "ExportTopology": on_cluster(DESCRIBE),
    "CreateAcls": on_cluster(CLUSTER_ADMIN),
    "DescribeAcls": on_cluster(DESCRIBE),
    "DeleteAcls": on_cluster(CLUSTER_ADMIN),
    "DeleteRecords": Rule(lambda enforcer, caller, request: enforcer.refusal(
        caller, DELETE, TOPIC, sorted({p.topic for p in request.partitions}))),
    "AlterClientQuotas": on_cluster(CLUSTER_ADMIN),
    "DescribeClientQuotas": on_cluster(DESCRIBE),
}
