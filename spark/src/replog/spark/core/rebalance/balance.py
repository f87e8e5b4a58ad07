"""What a balanced, rack-diverse assignment is, and the least a plan must move to reach one.

The plan's input (`PartitionLoad`), its result (`PlanResult`) and its error (`PlanError`),
with the rules every phase follows: balanced targets (`balanced_targets`), the lower bound
on moves (`moves_lower_bound`) and rack diversity (`racks_spanned`, `rack_violations`).
The package docstring says why each rule is what it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence


@dataclass(frozen=True)
class PartitionLoad:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    size_bytes: int          # 0 when unknown


@dataclass
class PlanResult:
    replicas: list[list[int]]               # new replica list per input partition, same order
    replica_targets: dict[int, int]
    leader_targets: dict[int, int]
    moves: int = 0
    bytes_moved: int = 0
    moves_lower_bound: int = 0
    moves_for_rack_diversity: int = 0
    preferred_leader_changes: int = 0
    stuck_brokers: list[int] = field(default_factory=list)   # still over target: no allowed move found


class PlanError(Exception):
    """A target set that cannot hold the partitions (e.g. fewer brokers than a replication factor)."""


def balanced_targets(current: Mapping[int, int], brokers: Sequence[int], total: int) -> dict[int, int]:
    """floor(total/n) each, +1 for the ``total mod n`` brokers holding the most now (ties: lower id)."""
    n = len(brokers)
    base, extra = divmod(total, n)
    ranked = sorted(brokers, key=lambda b: (-current.get(b, 0), b))
    return {b: base + (1 if index < extra else 0) for index, b in enumerate(ranked)}


def moves_lower_bound(current: Mapping[int, int], targets: Mapping[int, int]) -> int:
    leaving = sum(count for broker, count in current.items() if broker not in targets)
    return leaving + sum(max(0, current.get(b, 0) - t) for b, t in targets.items())


def racks_spanned(replicas: Iterable[int], rack_of: Mapping[int, str | None]) -> int:
    return len({rack_of.get(b) for b in replicas} - {None})


def rack_violations(assignments: Iterable[Sequence[int]], rack_of: Mapping[int, str | None],
                    racks_in_cluster: int) -> int:
    return sum(1 for replicas in assignments
               if racks_spanned(replicas, rack_of) < min(len(replicas), racks_in_cluster))
