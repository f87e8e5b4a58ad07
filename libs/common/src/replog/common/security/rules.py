"""Who may call what: the authorization rules of every gRPC service, as one table.

Theory of operation. The TLS handshake has proved who the caller is (principal.py); these rules
say what that principal may call. A rule is per service: the kinds of principal allowed, and for
some methods the request field naming the broker the call speaks for, which must be the caller's
own id -- a broker proposes ISR changes, shuts down and fetches as itself, never as another:

- BrokerControlService (LeaderAndIsr, StopReplica, UpdateMetadata): the controller alone commands
  the brokers;
- ReplicationService: brokers, each fetching as itself;
- ControllerService (AlterPartition, ControlledShutdown): brokers, each for itself;
- LogService, GroupService, AdminService, health and reflection: any principal (topic and group
  ACLs are the servicers' business).

A service missing from the table is refused to everyone: a new service is closed until a rule
says who may call it. `decide` is pure; the interceptor (authorization.py) applies it to calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Callable

from replog.common.security.principal import KINDS, Principal

UNAUTHENTICATED = "UNAUTHENTICATED"
PERMISSION_DENIED = "PERMISSION_DENIED"


@dataclass(frozen=True)
class Rule:
    kinds: frozenset[str]  # the principal kinds that may call
    who: str               # the allowed callers in words, for refusal messages


@dataclass(frozen=True)
class Refusal:
    code: str    # UNAUTHENTICATED or PERMISSION_DENIED (grpc.StatusCode names)
    reason: str  # short, stable: the key refusals are logged once by
    message: str  # for the caller: what was refused and what would be allowed


ANYONE = Rule(frozenset(KINDS), "any principal with a certificate of this cluster")
CONTROLLER = Rule(frozenset({"controller"}), "the controller")
BROKERS = Rule(frozenset({"broker"}), "brokers")

RULES: dict[str, Rule] = {
    "replog.v1.BrokerControlService": CONTROLLER,
    "replog.v1.ReplicationService": BROKERS,
    "replog.v1.ControllerService": BROKERS,
    "replog.v1.LogService": ANYONE,
    "replog.v1.GroupService": ANYONE,
    "replog.v1.AdminService": ANYONE,
    "grpc.health.v1.Health": ANYONE,
    "grpc.reflection.v1alpha.ServerReflection": ANYONE,
    "grpc.reflection.v1.ServerReflection": ANYONE,
}

# Methods whose request names the broker it speaks for: the request field (dotted path) that must
# equal the calling broker's id. A stream's every request is checked.
SPEAKS_FOR: dict[str, str] = {
    "/replog.v1.ControllerService/AlterPartition": "broker_id",
    "/replog.v1.ControllerService/ControlledShutdown": "broker_id",
    "/replog.v1.ReplicationService/ReplicaFetch": "replica_id",
    "/replog.v1.ReplicationService/ReplicaFetchStream": "fetch.replica_id",
    "/replog.v1.ReplicationService/OffsetForLeaderEpoch": "replica_id",
}


def service_of(method: str) -> str:
    """'/replog.v1.LogService/Produce' -> 'replog.v1.LogService'."""
    return method[1:].partition("/")[0]


def decide(principal: Principal | None, method: str) -> Refusal | None:
    """None when `principal` may call `method` at all (a speaks-for check may follow), else why not."""
    if principal is None:
        return Refusal(UNAUTHENTICATED, "no identity",
                       f"{method} needs a client certificate of this cluster naming a replog:// identity "
                       "(pass --tls-ca-file, --tls-cert-file and --tls-key-file, or REPLOG_TLS_* in the environment)")
    rule = RULES.get(service_of(method))
    if rule is None:
        return Refusal(PERMISSION_DENIED, "no rule",
                       f"{principal} may not call {method}: no authorization rule names {service_of(method)}")
    if principal.kind not in rule.kinds:
        return Refusal(PERMISSION_DENIED, f"not {rule.who}",
                       f"{principal} may not call {method}: only {rule.who} may")
    return None


def speaks_for_reader(method: str) -> Callable[[object], int] | None:
    """The function reading the id a `method` request speaks for; None if it speaks for nobody."""
    path = SPEAKS_FOR.get(method)
    return attrgetter(path) if path else None


def decide_speaks_for(principal: Principal, method: str, claimed_id: int) -> Refusal | None:
    """None when the calling broker is the one the request names, else the refusal."""
    if principal.service_id == claimed_id:
        return None
    return Refusal(PERMISSION_DENIED, "speaks for another broker",
                   f"{principal} may not call {method} for broker {claimed_id}: a broker speaks only for "
                   f"itself (its certificate names {principal.uri})")
