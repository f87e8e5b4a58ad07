"""Who may do what over the Kafka listener: the gRPC method table's decisions, reused.

Each Kafka API stands for the gRPC method that does the same thing (`METHOD_OF`); a Kafka request is
allowed exactly when that method's rule (security/rules.py) admits the connection's principal and
its ACL need is met for the resources the request names. Kafka answers a refusal per resource
rather than for the whole request, so the need is asked one topic (or group) at a time, with a
stand-in request carrying just that name in the fields the needs read (`partitions[].topic`,
`topics`, `group_id`). On a plaintext listener (an --insecure cluster) there is no principal and,
as on the gRPC port, no authorization.

Also the gRPC call context the listener hands the servicers it reuses (`KafkaCallContext`): it
names the connection's principal the way a TLS peer does, so the client quotas (quotas/edge.py)
measure a Kafka client as the same user, and turns an abort into an exception.
"""

from __future__ import annotations

from types import SimpleNamespace

from replog.common.acls.enforcement import Enforcer
from replog.common.security.principal import SAN_IDENTITY_KEY, Principal
from replog.common.security.rules import RULES, USER, decide

_LOG, _GROUP, _ADMIN = "/replog.v1.LogService/", "/replog.v1.GroupService/", "/replog.v1.AdminService/"
METHOD_OF = {
    "Produce": _LOG + "Produce",
    "Fetch": _LOG + "Fetch",
    "ListOffsets": _LOG + "ListOffsets",
    "OffsetForLeaderEpoch": _LOG + "OffsetsForLeaderEpochs",
    "Metadata": _LOG + "Metadata",
    "InitProducerId": _LOG + "InitProducerId",
    "FindCoordinator": _GROUP + "FindCoordinator",
    "JoinGroup": _GROUP + "JoinGroup",
    "SyncGroup": _GROUP + "SyncGroup",
    "Heartbeat": _GROUP + "Heartbeat",
    "LeaveGroup": _GROUP + "LeaveGroup",
    "OffsetCommit": _GROUP + "OffsetCommit",
    "OffsetFetch": _GROUP + "OffsetFetch",
    "DescribeGroups": _GROUP + "DescribeGroups",
    "ListGroups": _GROUP + "ListGroups",
    "CreateTopics": _ADMIN + "CreateTopic",
    "DeleteTopics": _ADMIN + "DeleteTopic",
    "DescribeConfigs": _ADMIN + "DescribeTopics",
    "DescribeCluster": _ADMIN + "DescribeCluster",
}


class Access:
    def __init__(self, enforcer: Enforcer | None) -> None:
        self._enforcer = enforcer  # None: a plaintext listener, nothing is checked

    def may_call(self, principal: Principal | None, api_name: str) -> bool:
        """The rule admits the principal at all (its kind; ACLs aside)."""
        if self._enforcer is None:
            return True
        method = METHOD_OF.get(api_name)
        return method is not None and decide(principal, method) is None

    def allowed(self, principal: Principal | None, api_name: str, *, topic: str | None = None,
                group: str | None = None) -> bool:
        """The rule admits the principal and its ACL need holds for the one topic or group named."""
        if self._enforcer is None:
            return True
        method = METHOD_OF.get(api_name)
        if method is None or decide(principal, method) is not None:
            return False
        if principal.kind != USER:
            return True  # a service the rule admits needs no ACL
        named = [] if topic is None else [topic]
        stand_in = SimpleNamespace(partitions=[SimpleNamespace(topic=t) for t in named], topics=named,
                                   group_id=group or "", name=topic or "", names=named, group_ids=[group])
        return RULES[method].user.refusal(self._enforcer, str(principal), stand_in) is None

    def may_describe(self, principal: Principal | None, topic: str) -> bool:
        return self.allowed(principal, "Metadata", topic=topic)


class CallAborted(Exception):
    def __init__(self, code, message: str) -> None:
        super().__init__(message)
        self.code = code


class KafkaCallContext:
    """What the reused servicers read of a gRPC call's context, for one Kafka request."""

    def __init__(self, principal: Principal | None, peer: str) -> None:
        self._principal = principal
        self._peer = peer

    def peer(self) -> str:
        return f"kafka:{self._peer}"

    def peer_identity_key(self):
        return SAN_IDENTITY_KEY if self._principal is not None else None

    def peer_identities(self):
        return [self._principal.uri.encode()] if self._principal is not None else []

    def invocation_metadata(self):
        return ()

    def is_active(self) -> bool:
        return True

    def abort(self, code, message: str):
        raise CallAborted(code, message)
