"""Who may call what: one rule for every method of every gRPC service replog serves.

Theory of operation. The TLS handshake has proved who the caller is (principal.py); a rule says
what that principal may do with one method:

- `services`: the service identities (controller, broker, gateway) that may call it. A service
  identity has the rights of its role and no more: the controller commands brokers, a broker
  fetches from its leaders and reports to the controller, a gateway reads brokers' replica and
  group state and moves log starts for a DeleteRecords its user was authorized for. No service
  identity may administer topics, configs or ACLs, or produce and consume: that is a user's
  business, checked against the ACLs, so one stolen host certificate does not make a super user.
- `speaks_for`: the request field naming the broker a broker's request speaks for, which must be
  the caller's own id, everywhere a broker reports about a broker (AlterPartition,
  ControlledShutdown, LogDirsOffline) or fetches as a replica. A stream's every request is checked.
- `user`: what a user needs from the ACLs (acl_needs.py), checked on every request (every message
  of a stream); None when no user may call the method. `user_to_open`: what a user needs to open a
  request stream at all, before any thread or slot is given to it (opening a ProduceStream needs
  produce on some topic).
- `trim`: what of the answer a user may not see is dropped (listings of every topic, group,
  replica or committed offset show only the describable ones).

A method missing from the table is refused to everyone (fail-closed): a new method is closed
until a rule says who may call it, and a unit test walks every method the servers offer and fails
when one has no rule. `decide` and `decide_speaks_for` are pure; the interceptor
(authorization.py) applies them and the ACL needs to calls. docs/authorization.md is generated
from this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Callable

from replog.common.acls.core.model import ALTER, CLUSTER_ADMIN, CONSUME, CREATE, DELETE, DESCRIBE, GROUP, PRODUCE, TOPIC
from replog.common.security.acl_needs import (
    Need,
    Nothing,
    ProduceSomewhere,
    Trim,
    all_of,
    any_of,
    group_id_of,
    group_of,
    itself,
    keep_describable,
    lists_everything,
    name_of,
    on_cluster,
    on_groups,
    on_topics,
    partition_topics,
    topic_of,
)
from replog.common.security.principal import Principal

UNAUTHENTICATED = "UNAUTHENTICATED"
PERMISSION_DENIED = "PERMISSION_DENIED"

CONTROLLER, BROKER, GATEWAY, USER = "controller", "broker", "gateway", "user"


@dataclass(frozen=True)
class Rule:
    services: frozenset[str] = frozenset()  # service kinds that may call, by their role
    user: Need | None = None                # what a user needs; None: no user may call
    speaks_for: str | None = None           # request field (dotted) that must name the calling broker
    user_to_open: Need | None = None        # request streams: what a user needs to open one
    trim: Trim | None = None                # drops from a user's answer what it may not describe

    def admits(self, kind: str) -> bool:
        return kind in self.services or (kind == USER and self.user is not None)

    @property
    def who(self) -> str:
        """The allowed callers in words, for refusal messages."""
        words = {CONTROLLER: "the controller", BROKER: "brokers", GATEWAY: "gateways"}
        named = [words[k] for k in sorted(self.services)] + (["users the ACLs allow"] if self.user else [])
        return " or ".join(named) or "no one"


@dataclass(frozen=True)
class Refusal:
    code: str    # UNAUTHENTICATED or PERMISSION_DENIED (grpc.StatusCode names)
    reason: str  # short, stable: the key refusals are logged once by
    message: str  # for the caller: what was refused and what would be allowed


def _controller() -> Rule:
    return Rule(services=frozenset({CONTROLLER}))


def _broker_as(field: str) -> Rule:
    return Rule(services=frozenset({BROKER}), speaks_for=field)


def _anyone() -> Rule:
    return Rule(services=frozenset({CONTROLLER, BROKER, GATEWAY}), user=Nothing())


def _user(need: Need, *, services: frozenset[str] = frozenset(), trim: Trim | None = None,
          to_open: Need | None = None) -> Rule:
    return Rule(services=services, user=need, trim=trim, user_to_open=to_open)


_GATEWAY = frozenset({GATEWAY})


def _offset_topics(request) -> list[str]:
    return list(dict.fromkeys(p.topic for p in request.partitions))


def _stream_produce_topics(request) -> list[str]:
    return partition_topics(request.produce)


_BROKER_CONTROL = "/replog.v1.BrokerControlService/"
_REPLICATION = "/replog.v1.ReplicationService/"
_CONTROLLER = "/replog.v1.ControllerService/"
_LOG = "/replog.v1.LogService/"
_GROUP = "/replog.v1.GroupService/"
_ADMIN = "/replog.v1.AdminService/"
_HEALTH = "/grpc.health.v1.Health/"
_REFLECTION_SERVICES = ("grpc.reflection.v1alpha.ServerReflection", "grpc.reflection.v1.ServerReflection")

RULES: dict[str, Rule] = {
    # The controller commands the brokers.
    _BROKER_CONTROL + "LeaderAndIsr": _controller(),
    _BROKER_CONTROL + "StopReplica": _controller(),
    _BROKER_CONTROL + "UpdateMetadata": _controller(),
    # Brokers fetch from their leaders, each as itself.
    _REPLICATION + "ReplicaFetch": _broker_as("replica_id"),
    _REPLICATION + "ReplicaFetchStream": _broker_as("fetch.replica_id"),
    _REPLICATION + "OffsetForLeaderEpoch": _broker_as("replica_id"),
    # Brokers report to the controller, each about itself.
    _CONTROLLER + "AlterPartition": _broker_as("broker_id"),
    _CONTROLLER + "ControlledShutdown": _broker_as("broker_id"),
    _CONTROLLER + "LogDirsOffline": _broker_as("broker_id"),
    # Clients' data path.
    _LOG + "Produce": _user(on_topics(PRODUCE, partition_topics)),
    _LOG + "ProduceStream": _user(on_topics(PRODUCE, _stream_produce_topics, "each topic of each request"),
                                  to_open=ProduceSomewhere()),
    _LOG + "Fetch": _user(on_topics(CONSUME, partition_topics)),
    _LOG + "ListOffsets": _user(on_topics(DESCRIBE, partition_topics)),
    _LOG + "OffsetsForLeaderEpochs": _user(on_topics(DESCRIBE, partition_topics)),
    _LOG + "Metadata": _user(on_topics(DESCRIBE, attrgetter("topics")),
                             trim=keep_describable("topics", TOPIC, name_of, lists_everything("topics"))),
    _LOG + "InitProducerId": _user(ProduceSomewhere()),
    _LOG + "DescribeReplicas": _user(on_topics(DESCRIBE, partition_topics), services=_GATEWAY,
                                     trim=keep_describable("replicas", TOPIC, topic_of,
                                                           lists_everything("partitions"))),
    _LOG + "AdvanceLogStartOffset": _user(on_topics(DELETE, partition_topics), services=_GATEWAY),
    # Consumer groups.
    _GROUP + "FindCoordinator": _user(on_groups(DESCRIBE, group_of)),
    _GROUP + "JoinGroup": _user(on_groups(CONSUME, group_of)),
    _GROUP + "SyncGroup": _user(on_groups(CONSUME, group_of)),
    _GROUP + "Heartbeat": _user(on_groups(CONSUME, group_of)),
    _GROUP + "LeaveGroup": _user(on_groups(CONSUME, group_of)),
    _GROUP + "OffsetCommit": _user(all_of(on_groups(CONSUME, group_of), on_topics(CONSUME, _offset_topics))),
    _GROUP + "AlterGroupOffsets": _user(all_of(on_groups(CONSUME, group_of), on_topics(CONSUME, _offset_topics))),
    _GROUP + "OffsetFetch": _user(on_groups(DESCRIBE, group_of), services=_GATEWAY,
                                  trim=keep_describable("offsets", TOPIC, topic_of)),
    _GROUP + "ListGroups": _user(Nothing("nothing; the answer lists only the groups the user may `describe`"),
                                 services=_GATEWAY, trim=keep_describable("groups", GROUP, group_id_of)),
    _GROUP + "DescribeGroups": _user(on_groups(DESCRIBE, attrgetter("group_ids"), "each group named"),
                                     services=_GATEWAY),
    _GROUP + "DeleteGroups": _user(on_groups(DELETE, attrgetter("group_ids"), "each group named")),
    # Administration, at the gateway: users only, whatever a service certificate says.
    _ADMIN + "CreateTopic": _user(any_of(on_cluster(CREATE), on_topics(CREATE, lambda r: (r.name,), "the topic"))),
    _ADMIN + "DeleteTopic": _user(on_topics(DELETE, lambda r: (r.name,), "the topic")),
    _ADMIN + "ListTopics": _user(Nothing("nothing; the answer lists only the topics the user may `describe`"),
                                 trim=keep_describable("topics", TOPIC, itself)),
    _ADMIN + "DescribeTopics": _user(on_topics(DESCRIBE, attrgetter("names")),
                                     trim=keep_describable("topics", TOPIC, name_of, lists_everything("names"))),
    _ADMIN + "CreatePartitions": _user(on_topics(ALTER, lambda r: (r.topic,), "the topic")),
    _ADMIN + "AlterTopicConfigs": _user(on_topics(ALTER, lambda r: (r.topic,), "the topic")),
    _ADMIN + "DescribeCluster": _user(on_cluster(DESCRIBE)),
    _ADMIN + "GenerateReassignment": _user(on_cluster(DESCRIBE)),
    _ADMIN + "ExecuteReassignment": _user(on_cluster(CLUSTER_ADMIN)),
    _ADMIN + "VerifyReassignment": _user(on_cluster(DESCRIBE)),
    _ADMIN + "CancelReassignment": _user(on_cluster(CLUSTER_ADMIN)),
    _ADMIN + "ListReassignments": _user(on_cluster(DESCRIBE)),
    _ADMIN + "ElectLeaders": _user(on_cluster(CLUSTER_ADMIN)),
    _ADMIN + "ExportTopology": _user(on_cluster(DESCRIBE)),
    _ADMIN + "CreateAcls": _user(on_cluster(CLUSTER_ADMIN)),
    _ADMIN + "DescribeAcls": _user(on_cluster(DESCRIBE)),
    _ADMIN + "DeleteAcls": _user(on_cluster(CLUSTER_ADMIN)),
    _ADMIN + "DeleteRecords": _user(on_topics(DELETE, partition_topics)),
    _ADMIN + "AlterClientQuotas": _user(on_cluster(CLUSTER_ADMIN)),
    _ADMIN + "DescribeClientQuotas": _user(on_cluster(DESCRIBE)),
    # Every server: health and reflection answer any identity of the cluster.
    _HEALTH + "Check": _anyone(),
    _HEALTH + "Watch": _anyone(),
    _HEALTH + "List": _anyone(),
    **{f"/{service}/ServerReflectionInfo": _anyone() for service in _REFLECTION_SERVICES},
}

def service_of(method: str) -> str:
    """'/replog.v1.LogService/Produce' -> 'replog.v1.LogService'."""
    return method[1:].partition("/")[0]


def decide(principal: Principal | None, method: str, rules: dict[str, Rule] = RULES) -> Refusal | None:
    """None when `principal` may call `method` at all (its speaks-for and ACL checks may follow), else why not."""
    if principal is None:
        return Refusal(UNAUTHENTICATED, "no identity",
                       f"{method} needs a client certificate of this cluster naming a replog:// identity "
                       "(pass --tls-ca-file, --tls-cert-file and --tls-key-file, or REPLOG_TLS_* in the environment)")
    rule = rules.get(method)
    if rule is None:
        return Refusal(PERMISSION_DENIED, "no rule",
                       f"{principal} may not call {method}: no authorization rule names it, so no one may")
    if not rule.admits(principal.kind):
        return Refusal(PERMISSION_DENIED, f"not {rule.who}",
                       f"{principal} may not call {method}: only {rule.who} may"
                       + (" (a service certificate has its role's rights, not a user's)"
                          if principal.kind != USER and rule.user is not None else ""))
    return None


def speaks_for_reader(method: str, rules: dict[str, Rule] = RULES) -> Callable[[object], int] | None:
    """The function reading the id a `method` request speaks for; None if it speaks for nobody."""
    rule = rules.get(method)
    return attrgetter(rule.speaks_for) if rule is not None and rule.speaks_for else None


def decide_speaks_for(principal: Principal, method: str, claimed_id: int) -> Refusal | None:
    """None when the calling broker is the one the request names, else the refusal."""
    if principal.service_id == claimed_id:
        return None
    return Refusal(PERMISSION_DENIED, "speaks for another broker",
                   f"{principal} may not call {method} for broker {claimed_id}: a broker speaks only for "
                   f"itself (its certificate names {principal.uri})")
