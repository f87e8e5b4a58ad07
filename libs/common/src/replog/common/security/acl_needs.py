"""What a user needs from the ACLs to make one request, and what an answer may show it.

A `Need` reads the resources a request names and asks the ACLs (acls/enforcement.py) whether the
calling user may act on every one; its `refusal` is None or the message to answer
PERMISSION_DENIED with. `text` says the same in words: the generated authorization reference
(docs/authorization.md) prints it beside each method, so the page and the check cannot disagree.

A `Trim` drops from an answer what the user may not describe: a listing of every topic (or group,
or replica, or committed offset) shows only those it may see, as Kafka's do. Trims change the
answer in place and run only for users.

Kafka's rules in replog's words (docs/acls.md): produce is WRITE, consume is READ, cluster_admin
is ClusterAction and Alter on the cluster. Pure but for the Enforcer's once-only log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from replog.common.acls.core.model import CLUSTER, CLUSTER_NAME, DESCRIBE, GROUP, TOPIC
from replog.common.acls.enforcement import Enforcer

Names = Callable[[Any], Iterable[str]]


class Need(Protocol):
    text: str

    def refusal(self, enforcer: Enforcer, principal: str, request: Any) -> str | None: ...


@dataclass(frozen=True)
class Nothing:
    """Any identity of the cluster may make the request (health, reflection)."""

    text: str = "nothing: any identity of the cluster"

    def refusal(self, enforcer: Enforcer, principal: str, request: Any) -> str | None:
        return None


@dataclass(frozen=True)
class On:
    """`operation` on every resource of `resource_type` the request names (`names`), or on the cluster."""

    operation: str
    resource_type: str
    names: Names | None = None  # None: the cluster
    named: str = ""             # which resources, in words ("each topic named")

    @property
    def text(self) -> str:
        if self.resource_type == CLUSTER:
            return f"`{self.operation}` on the cluster"
        return f"`{self.operation}` on {self.named or 'the ' + self.resource_type}"

    def refusal(self, enforcer: Enforcer, principal: str, request: Any) -> str | None:
        names = (CLUSTER_NAME,) if self.names is None else self.names(request)
        return enforcer.refusal(principal, self.operation, self.resource_type, names)


@dataclass(frozen=True)
class AllOf:
    needs: tuple[Need, ...]

    @property
    def text(self) -> str:
        return " and ".join(n.text for n in self.needs)

    def refusal(self, enforcer: Enforcer, principal: str, request: Any) -> str | None:
        for need in self.needs:
            refused = need.refusal(enforcer, principal, request)
            if refused is not None:
                return refused
        return None


@dataclass(frozen=True)
class AnyOf:
    """The first need that allows is enough; refused, the answer names the last one tried."""

    needs: tuple[Need, ...]

    @property
    def text(self) -> str:
        return ", or ".join(n.text for n in self.needs)

    def refusal(self, enforcer: Enforcer, principal: str, request: Any) -> str | None:
        refused = None
        for need in self.needs:
            refused = need.refusal(enforcer, principal, request)
            if refused is None:
                return None
        return refused


@dataclass(frozen=True)
class ProduceSomewhere:
    """A request that names no topic but is only of use to a producer (InitProducerId, opening a
    ProduceStream): Kafka asks for WRITE on some topic before it hands out a producer id."""

    text: str = "`produce` on some topic"

    def refusal(self, enforcer: Enforcer, principal: str, request: Any) -> str | None:
        if enforcer.authorizer.may_produce_somewhere(principal):
            return None
        return (f"{principal} is not authorized to produce on any topic: nothing was done (an operator can grant "
                f"it: replog acls add --allow-principal {principal} --operation produce --topic <topic>)")


def all_of(*needs: Need) -> Need:
    return needs[0] if len(needs) == 1 else AllOf(tuple(needs))


def any_of(*needs: Need) -> Need:
    return AnyOf(tuple(needs))


def on_cluster(operation: str) -> Need:
    return On(operation, CLUSTER)


def on_topics(operation: str, names: Names, named: str = "each topic named") -> Need:
    return On(operation, TOPIC, names, named)


def on_groups(operation: str, names: Names, named: str = "the group") -> Need:
    return On(operation, GROUP, names, named)


# --- what a request names ------------------------------------------------------------------

def partition_topics(request) -> list[str]:
    """The distinct topics of a request's `partitions` (each item has a `topic`), in first-seen order."""
    return list(dict.fromkeys(p.topic for p in request.partitions))


def group_of(request) -> tuple[str]:
    return (request.group_id,)


# --- trims ---------------------------------------------------------------------------------

Trim = Callable[[Enforcer, str, Any, Any], None]


def keep_describable(field: str, resource_type: str, name_of: Callable[[Any], str],
                     when: Callable[[Any], bool] = lambda request: True) -> Trim:
    """A trim keeping in `response.<field>` only the items whose resource the user may describe; applied
    when `when(request)` (a listing of everything, not of named resources the need already checked)."""

    def trim(enforcer: Enforcer, principal: str, request: Any, response: Any) -> None:
        if not when(request):
            return
        items = getattr(response, field)
        kept = [item for item in items if enforcer.allows(principal, DESCRIBE, resource_type, name_of(item))]
        if len(kept) != len(items):
            del items[:]
            items.extend(kept)

    return trim


def itself(item: str) -> str:
    return item


def topic_of(item) -> str:
    return item.topic


def name_of(item) -> str:
    return item.name


def group_id_of(item) -> str:
    return item.group_id


def lists_everything(field: str) -> Callable[[Any], bool]:
    """True for a request whose `field` is empty: it asks about every resource, so its answer is trimmed."""
    return lambda request: not getattr(request, field)

