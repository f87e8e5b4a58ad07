"""ACL requests: validate bindings and filters, and decide what CreateAcls and DeleteAcls write.

The adapter (gateway/acls.py) reads every resource pattern's bindings with its znode version
(`Stored`), and carries out the `AclWrite`s decided here in one version-checked transaction.
A pattern left with no binding is deleted, so the tree holds only patterns in use. The rules a
binding must follow are the ACL model's (replog.common.acls.core.model); this module only says
which binding of a request broke one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from replog.common.acls.core.model import AclBinding, AclFilter, binding_problem, filter_problem

from replog.common.topic_admin.core.refusal import invalid

Resource = tuple[str, str, str]  # (resource_type, pattern_type, resource_name): one znode
NO_ZNODE = -1


@dataclass(frozen=True)
class Stored:
    bindings: frozenset[AclBinding]
    version: int                      # the pattern znode's version


@dataclass(frozen=True)
class AclWrite:
    resource: Resource
    bindings: tuple[AclBinding, ...]  # empty: delete the znode
    version: int                      # NO_ZNODE: create it


@dataclass(frozen=True)
class AclCreation:
    writes: tuple[AclWrite, ...]
    created: tuple[AclBinding, ...]
    already_present: tuple[AclBinding, ...]


@dataclass(frozen=True)
class AclDeletion:
    writes: tuple[AclWrite, ...]
    deleted: tuple[AclBinding, ...]


def resource_of(binding: AclBinding) -> Resource:
    return binding.resource_type, binding.pattern_type, binding.resource_name


def check_bindings(bindings: Sequence[AclBinding]) -> None:
    if not bindings:
        raise invalid("CreateAcls needs at least one binding.")
    for index, binding in enumerate(bindings):
        problem = binding_problem(binding)
        if problem:
            raise invalid(f"binding {index}: {problem}; nothing was created.")


def check_filters(filters: Sequence[AclFilter], *, at_least_one: bool) -> None:
    if at_least_one and not filters:
        raise invalid("DeleteAcls needs at least one filter (an empty filter matches every binding).")
    for index, acl_filter in enumerate(filters):
        problem = filter_problem(acl_filter)
        if problem:
            raise invalid(f"filter {index}: {problem}; nothing was changed." if at_least_one else f"filter: {problem}")


def plan_create(stored: Mapping[Resource, Stored], bindings: Iterable[AclBinding]) -> AclCreation:
    wanted: dict[Resource, set[AclBinding]] = {}
    for binding in bindings:
        wanted.setdefault(resource_of(binding), set()).add(binding)
    writes, created, present = [], [], []
    for resource in sorted(wanted):
        current = stored.get(resource, Stored(frozenset(), NO_ZNODE))
        new = wanted[resource] - current.bindings
        present += wanted[resource] & current.bindings
        if new:
            created += new
            writes.append(AclWrite(resource, tuple(sorted(current.bindings | new)), current.version))
    return AclCreation(tuple(writes), tuple(sorted(created)), tuple(sorted(present)))


def plan_delete(stored: Mapping[Resource, Stored], filters: Sequence[AclFilter]) -> AclDeletion:
    writes, deleted = [], []
    for resource in sorted(stored):
        current = stored[resource]
        gone = {b for b in current.bindings if any(f.matches(b) for f in filters)}
        if gone:
            deleted += gone
            writes.append(AclWrite(resource, tuple(sorted(current.bindings - gone)), current.version))
    return AclDeletion(tuple(writes), tuple(sorted(deleted)))


def describe(stored: Mapping[Resource, Stored], acl_filter: AclFilter) -> list[AclBinding]:
    return sorted(b for current in stored.values() for b in current.bindings if acl_filter.matches(b))
