"""ACL bindings and filters as values, and the rules a binding must follow to be stored.

A binding says: this principal (or every user, `User:*`) is allowed or denied this operation on
the resources this pattern names. Names and rules follow Kafka's ACLs (KIP-290 for prefixed
patterns): a literal pattern names one resource, or every resource of its type with `*`; a
prefixed pattern names every resource whose name starts with it. The operations are replog's
own words for Kafka's: produce is WRITE, consume is READ, cluster_admin is ClusterAction and
Alter on the cluster. The cluster is the one resource named `replog-cluster`.

`binding_problem` and `filter_problem` say what is wrong with a value in words a person can
act on, or None; the gateway refuses such a request before anything is written, and the
store's reader skips (and logs) a binding that fails them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOPIC = "topic"
CLUSTER = "cluster"
GROUP = "group"
RESOURCE_TYPES = (TOPIC, CLUSTER, GROUP)

LITERAL = "literal"
PREFIXED = "prefixed"
PATTERN_TYPES = (LITERAL, PREFIXED)

ALLOW = "allow"
DENY = "deny"
PERMISSIONS = (ALLOW, DENY)

PRODUCE = "produce"
CONSUME = "consume"
DESCRIBE = "describe"
CREATE = "create"
ALTER = "alter"
DELETE = "delete"
CLUSTER_ADMIN = "cluster_admin"
ALL = "all"
OPERATIONS = (PRODUCE, CONSUME, DESCRIBE, CREATE, ALTER, DELETE, CLUSTER_ADMIN, ALL)

# Which operations a binding may name on each resource type (Kafka's lists, in replog's words).
OPERATIONS_BY_RESOURCE = {
    TOPIC: frozenset({PRODUCE, CONSUME, DESCRIBE, CREATE, ALTER, DELETE, ALL}),
    CLUSTER: frozenset({DESCRIBE, CREATE, ALTER, CLUSTER_ADMIN, ALL}),
    GROUP: frozenset({CONSUME, DESCRIBE, DELETE, ALL}),  # Kafka's READ, DESCRIBE and DELETE on a group
}

# An allow of any of these also allows describe on the same resource (Kafka: READ, WRITE, DELETE
# and ALTER imply DESCRIBE). cluster_admin stands for Kafka's Alter on the cluster as well, so it
# implies describing the cluster too. A deny of these denies nothing but themselves.
IMPLIES_DESCRIBE = frozenset({PRODUCE, CONSUME, ALTER, DELETE, CLUSTER_ADMIN})

CLUSTER_NAME = "replog-cluster"
WILDCARD = "*"
USER = "User"
ANY_USER = "User:*"

RESOURCE_NAME_LENGTH_MAX = 249  # a topic name's limit; a prefix is no longer than a name
PRINCIPAL_LENGTH_MAX = 1024
_RESOURCE_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_PRINCIPAL_NAME_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f,]")  # control characters; ',' separates super users


@dataclass(frozen=True, order=True)
class AclBinding:
    principal: str        # "User:alice", or "User:*" for every user
    resource_type: str    # TOPIC, CLUSTER or GROUP
    pattern_type: str     # LITERAL or PREFIXED
    resource_name: str    # a topic or group name, a prefix, "*" (literal: every one), or CLUSTER_NAME
    operation: str        # one of OPERATIONS
    permission: str       # ALLOW or DENY


@dataclass(frozen=True)
class AclFilter:
    """Which bindings a describe or delete is about; None in a field matches any value.

    `pattern_type` may also be "match": every binding that applies to the resource named
    `resource_name` (its literal, the literal `*` and every prefix of it), as Kafka's MATCH."""

    principal: str | None = None
    resource_type: str | None = None
    pattern_type: str | None = None
    resource_name: str | None = None
    operation: str | None = None
    permission: str | None = None

    def matches(self, binding: AclBinding) -> bool:
        if self.principal is not None and binding.principal != self.principal:
            return False
        if self.resource_type is not None and binding.resource_type != self.resource_type:
            return False
        if self.operation is not None and binding.operation != self.operation:
            return False
        if self.permission is not None and binding.permission != self.permission:
            return False
        if self.pattern_type == MATCH:
            return self.resource_name is None or pattern_covers(binding, self.resource_name)
        if self.pattern_type is not None and binding.pattern_type != self.pattern_type:
            return False
        return self.resource_name is None or binding.resource_name == self.resource_name


MATCH = "match"
FILTER_PATTERN_TYPES = (LITERAL, PREFIXED, MATCH)


def pattern_covers(binding: AclBinding, resource_name: str) -> bool:
    """Whether the binding's pattern names the resource `resource_name` (of the binding's type)."""
    if binding.pattern_type == LITERAL:
        return binding.resource_name == resource_name or binding.resource_name == WILDCARD
    return resource_name.startswith(binding.resource_name)


def _unknown(what: str, value: str, choices) -> str:
    if not value:
        return f"no {what} given; expected one of {', '.join(choices)}"
    return f"unknown {what} {value!r}; expected one of {', '.join(choices)}"


def principal_problem(principal: str) -> str | None:
    if not principal:
        return "the principal is empty; name one as User:<name>, or User:* for every user"
    kind, sep, name = principal.partition(":")
    if not sep or kind != USER or not name:
        return f"principal {principal!r} is not of the form User:<name> (or User:* for every user)"
    if len(principal) > PRINCIPAL_LENGTH_MAX:
        return f"principal {principal[:40]!r}... is longer than {PRINCIPAL_LENGTH_MAX} characters"
    if name != name.strip() or _PRINCIPAL_NAME_FORBIDDEN.search(name):
        return (f"principal {principal!r} has surrounding spaces, a control character or a ',' "
                "(commas separate principals in super_users)")
    return None


def resource_problem(resource_type: str, pattern_type: str, resource_name: str) -> str | None:
    if resource_type not in RESOURCE_TYPES:
        return _unknown("resource type", resource_type, RESOURCE_TYPES)
    if pattern_type not in PATTERN_TYPES:
        return _unknown("pattern type", pattern_type, PATTERN_TYPES)
    if resource_type == CLUSTER:
        if pattern_type != LITERAL or resource_name != CLUSTER_NAME:
            return f"the cluster resource is the literal name {CLUSTER_NAME!r}, not {pattern_type} {resource_name!r}"
        return None
    kind = "group id" if resource_type == GROUP else "topic name"
    if not resource_name:
        return f"the {kind} or prefix is empty"
    if resource_name == WILDCARD:
        return None if pattern_type == LITERAL else f"'*' is a literal pattern (every {resource_type}), not a prefix"
    if len(resource_name) > RESOURCE_NAME_LENGTH_MAX:
        return f"{kind} or prefix {resource_name[:40]!r}... is longer than {RESOURCE_NAME_LENGTH_MAX} characters"
    if not _RESOURCE_NAME.fullmatch(resource_name):
        return (f"{kind} or prefix {resource_name!r} may only hold ASCII letters, digits, '.', '_' and '-' "
                f"(or be '*' for every {resource_type})")
    if resource_name in (".", ".."):
        return f"{resource_name!r} cannot be a {kind} or prefix"
    return None


def operation_problem(operation: str, resource_type: str) -> str | None:
    if operation not in OPERATIONS:
        return _unknown("operation", operation, OPERATIONS)
    allowed = OPERATIONS_BY_RESOURCE.get(resource_type)
    if allowed is not None and operation not in allowed:
        return (f"operation {operation!r} does not apply to a {resource_type}; "
                f"a {resource_type} takes {', '.join(o for o in OPERATIONS if o in allowed)}")
    return None


def binding_problem(binding: AclBinding) -> str | None:
    """What is wrong with `binding`, or None when it may be stored."""
    return (principal_problem(binding.principal)
            or resource_problem(binding.resource_type, binding.pattern_type, binding.resource_name)
            or operation_problem(binding.operation, binding.resource_type)
            or (None if binding.permission in PERMISSIONS else _unknown("permission", binding.permission, PERMISSIONS)))


def filter_problem(acl_filter: AclFilter) -> str | None:
    """What is wrong with `acl_filter`, or None. Unset fields are fine; set ones must be known words."""
    f = acl_filter
    if f.principal is not None and (problem := principal_problem(f.principal)):
        return problem
    if f.resource_type is not None and f.resource_type not in RESOURCE_TYPES:
        return _unknown("resource type", f.resource_type, RESOURCE_TYPES)
    if f.pattern_type is not None and f.pattern_type not in FILTER_PATTERN_TYPES:
        return _unknown("pattern type", f.pattern_type, FILTER_PATTERN_TYPES)
    if f.pattern_type == MATCH and f.resource_name is None:
        return "a 'match' filter needs the resource name it matches"
    if f.operation is not None and f.operation not in OPERATIONS:
        return _unknown("operation", f.operation, OPERATIONS)
    if f.permission is not None and f.permission not in PERMISSIONS:
        return _unknown("permission", f.permission, PERMISSIONS)
    return None


def parse_principals(text: str) -> tuple[str, ...]:
    """'User:admin, User:ops' -> ('User:admin', 'User:ops'); raises ValueError naming a bad one."""
    principals = tuple(part.strip() for part in text.split(",") if part.strip())
    for principal in principals:
        problem = principal_problem(principal)
        if problem:
            raise ValueError(problem)
    return principals
