"""The authorization decision: may this principal do this operation on this resource?

Theory of operation (Kafka's AclAuthorizer, in replog's words):

1. A super user may do anything, whatever the bindings say.
2. The bindings that apply are those whose principal is the caller or `User:*` and whose
   pattern covers the resource (model.pattern_covers).
3. A deny that applies, for the operation or for `all`, refuses: deny wins over any allow.
4. Else an allow that applies, for the operation or for `all`, allows; for `describe`, so does
   an allow of an operation that implies it (model.IMPLIES_DESCRIBE).
5. Else the answer is no: with no binding, nothing is allowed.

The bindings are held as an immutable `_Snapshot`, replaced whole when the store reads a
change. Answers are cached per (principal, operation, resource type, resource name) inside the
snapshot, so a new snapshot starts with an empty cache and no stale answer outlives a change.
A reader takes the snapshot once per question, so it never mixes two generations. The cache is
bounded: past CACHE_ENTRIES_MAX it is emptied and fills again.

Pure: no I/O, no clock; the store adapter (acls/store.py) feeds it.
"""

from __future__ import annotations

from typing import Iterable

from .model import (
    ALL,
    ALLOW,
    ANY_USER,
    DENY,
    DESCRIBE,
    IMPLIES_DESCRIBE,
    LITERAL,
    PRODUCE,
    TOPIC,
    WILDCARD,
    AclBinding,
    pattern_covers,
)

CACHE_ENTRIES_MAX = 100_000

_Key = tuple[str, str, str, str]


class _Snapshot:
    """One generation of bindings, indexed by resource type and pattern, with its answers cache."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self.bindings = tuple(sorted(set(bindings)))
        self.literal: dict[tuple[str, str], list[AclBinding]] = {}
        self.prefixed: dict[str, list[AclBinding]] = {}
        for binding in self.bindings:
            if binding.pattern_type == LITERAL:
                self.literal.setdefault((binding.resource_type, binding.resource_name), []).append(binding)
            else:
                self.prefixed.setdefault(binding.resource_type, []).append(binding)
        self.cache: dict[_Key, bool] = {}

    def applicable(self, principal: str, resource_type: str, resource_name: str) -> list[AclBinding]:
        found = self.literal.get((resource_type, resource_name), []) + self.literal.get((resource_type, WILDCARD), [])
        found += [b for b in self.prefixed.get(resource_type, ()) if pattern_covers(b, resource_name)]
        return [b for b in found if b.principal == principal or b.principal == ANY_USER]


def decide(applicable: Iterable[AclBinding], operation: str) -> bool:
    """Rules 3 to 5 over the bindings that apply to one principal and resource."""
    allowed = False
    for binding in applicable:
        if binding.permission == DENY:
            if binding.operation in (operation, ALL):
                return False
        elif binding.operation in (operation, ALL) or (operation == DESCRIBE and binding.operation in IMPLIES_DESCRIBE):
            allowed = True
    return allowed


class Authorizer:
    def __init__(self, super_users: Iterable[str] = (), bindings: Iterable[AclBinding] = ()) -> None:
        self._super_users = frozenset(super_users)
        self._snapshot = _Snapshot(bindings)

    @property
    def bindings(self) -> tuple[AclBinding, ...]:
        return self._snapshot.bindings

    @property
    def super_users(self) -> frozenset[str]:
        return self._super_users

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Take a new generation of bindings; answers cached for the old one are dropped with it."""
        self._snapshot = _Snapshot(bindings)

    def authorize(self, principal: str, operation: str, resource_type: str, resource_name: str) -> bool:
        if principal in self._super_users:
            return True
        snapshot = self._snapshot
        key = (principal, operation, resource_type, resource_name)
        answer = snapshot.cache.get(key)
        if answer is None:
            answer = decide(snapshot.applicable(principal, resource_type, resource_name), operation)
            if len(snapshot.cache) >= CACHE_ENTRIES_MAX:
                snapshot.cache.clear()
            snapshot.cache[key] = answer
        return answer

    def may_produce_somewhere(self, principal: str) -> bool:
        """Whether the principal may produce to some topic: asked of a request that names none
        (InitProducerId), as Kafka asks for WRITE on any topic before handing out a producer id.

        True when some allow of produce (or all) for the principal is not itself covered by a
        deny for it: a deny on the same literal name, on the literal `*`, or on a prefix of the
        allowed name."""
        if principal in self._super_users:
            return True
        snapshot = self._snapshot
        mine = [b for b in snapshot.bindings
                if b.resource_type == TOPIC and b.principal in (principal, ANY_USER) and b.operation in (PRODUCE, ALL)]
        denies = [b for b in mine if b.permission == DENY]
        for allow in (b for b in mine if b.permission == ALLOW):
            if not any(_deny_covers(deny, allow) for deny in denies):
                return True
        return False


def _deny_covers(deny: AclBinding, allow: AclBinding) -> bool:
    if deny.pattern_type == LITERAL and deny.resource_name == WILDCARD:
        return True
    if allow.resource_name == WILDCARD:
        return False  # an allow of every topic survives any deny narrower than every topic
    if deny.pattern_type == LITERAL:
        return allow.pattern_type == LITERAL and deny.resource_name == allow.resource_name
    return allow.resource_name.startswith(deny.resource_name)
