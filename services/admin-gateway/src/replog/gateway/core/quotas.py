"""Client quota requests: validate them, and decide what AlterClientQuotas writes and DescribeClientQuotas shows.

The adapter (gateway/quotas.py) reads every entity's quotas with its znode version (`Stored`), and carries
out the `QuotaWrite`s decided here in one version-checked transaction. An entity left with no quota is
deleted, so the folder holds only entities with quotas. The rules a quota follows are the quota model's
(replog.common.quotas.core.model); this module says which part of a request broke one. A request is
refused whole, before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from replog.common.quotas.core.model import QUOTA_TYPES, QuotaRecord, QuotaSnapshot, principal_problem, rate_problem

from replog.common.topic_admin.core.model import NO_ZNODE
from replog.common.topic_admin.core.refusal import invalid

Entity = str | None  # "User:<name>", or None for the default of every user


@dataclass(frozen=True)
class Stored:
    record: QuotaRecord
    version: int                 # the entity's znode version


@dataclass(frozen=True)
class QuotaOp:
    quota_type: str | None       # None: not set in the request
    value: int
    remove: bool


@dataclass(frozen=True)
class Alteration:
    principal: str               # "" with default_user
    default_user: bool
    ops: tuple[QuotaOp, ...]


@dataclass(frozen=True)
class QuotaWrite:
    entity: Entity
    record: QuotaRecord          # empty: delete the znode
    version: int                 # NO_ZNODE: create it


@dataclass(frozen=True)
class QuotaChange:
    writes: tuple[QuotaWrite, ...]
    entries: tuple[tuple[Entity, QuotaRecord], ...]  # each entity of the request, after, in request order


def entity_name(entity: Entity) -> str:
    return "the default" if entity is None else entity


def entity_of(principal: str, default_user: bool, where: str) -> Entity:
    """The entity a request names; refused when it names none, both, or a bad principal."""
    if default_user and principal:
        raise invalid(f"{where}: name a user (principal User:<name>) or the default (default_user), not both")
    if default_user:
        return None
    if not principal:
        raise invalid(f"{where}: name a user (principal User:<name>) or the default of every user (default_user)")
    problem = principal_problem(principal)
    if problem:
        raise invalid(f"{where}: {problem}")
    return principal


def check_alterations(alterations: Sequence[Alteration]) -> list[tuple[Entity, dict[str, int | None]]]:
    """Each alteration's entity and changes (quota type -> rate, or None to remove), in request order."""
    if not alterations:
        raise invalid("AlterClientQuotas needs at least one alteration; nothing was changed.")
    checked, seen = [], set()
    for index, alteration in enumerate(alterations):
        where = f"alteration {index}"
        entity = entity_of(alteration.principal, alteration.default_user, f"{where}; nothing was changed")
        where = f"alteration {index} ({entity_name(entity)})"
        if entity in seen:
            raise invalid(f"{where}: the entity is altered twice in one request; nothing was changed.")
        seen.add(entity)
        if not alteration.ops:
            raise invalid(f"{where}: no op; set or remove at least one quota. Nothing was changed.")
        changes: dict[str, int | None] = {}
        for number, op in enumerate(alteration.ops):
            problem = _op_problem(op, changes)
            if problem:
                raise invalid(f"{where}, op {number}: {problem}; nothing was changed.")
            changes[op.quota_type] = None if op.remove else op.value
        checked.append((entity, changes))
    return checked


def _op_problem(op: QuotaOp, earlier: Mapping[str, int | None]) -> str | None:
    if op.quota_type is None:
        return f"no quota type; expected one of {', '.join(QUOTA_TYPES)}"
    if op.quota_type in earlier:
        return f"{op.quota_type} is changed twice"
    if op.remove:
        return f"a removal of {op.quota_type} takes no value (found {op.value})" if op.value else None
    return rate_problem(op.quota_type, op.value)


def plan_alter(stored: Mapping[Entity, Stored], checked: Sequence[tuple[Entity, Mapping[str, int | None]]]) -> QuotaChange:
    writes, entries = [], []
    for entity, changes in checked:
        current = stored.get(entity, Stored(QuotaRecord(), NO_ZNODE))
        record = replace(current.record, **changes)
        entries.append((entity, record))
        if record == current.record:
            continue  # nothing changes: no write (a removal of a quota not set, a rate set again)
        writes.append(QuotaWrite(entity, record, current.version))
    return QuotaChange(tuple(writes), tuple(entries))


def described(stored: Mapping[Entity, Stored], entity: Entity, named: bool) -> tuple[list[tuple[Entity, QuotaRecord]],
                                                                                      QuotaRecord | None]:
    """The entries a describe lists (all, or the one entity `named`), default first then users by principal;
    and with a user named, the rates that apply to it."""
    keys = sorted(stored, key=lambda e: (e is not None, e or ""))
    if named:
        keys = [e for e in keys if e == entity]
    effective = None
    if named and entity is not None:
        effective = QuotaSnapshot({e: s.record for e, s in stored.items()}).effective(entity)
    return [(e, stored[e].record) for e in keys], effective
