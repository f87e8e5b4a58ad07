"""A whole rebalance plan: the phases in order, and what the plan moved (`plan`)."""

from __future__ import annotations

from typing import Mapping, Sequence

from .balance import PartitionLoad, PlanError, PlanResult, moves_lower_bound
from .preferred_leaders import balance_leaders
from .replica_moves import ReplicaPlanner


def plan(partitions: Sequence[PartitionLoad], rack_of: Mapping[int, str | None],
         targets: Sequence[int]) -> PlanResult:
    """The whole plan: evacuate, repair racks, balance replicas, balance preferred leaders."""
    if not targets:
        raise PlanError("the target broker set is empty")
    rf_max = max((len(p.replicas) for p in partitions), default=0)
    if rf_max > len(set(targets)):
        raise PlanError(f"a replication factor of {rf_max} needs at least {rf_max} brokers; "
                        f"the target set has {len(set(targets))}")
    planner = ReplicaPlanner(partitions, rack_of, targets)
    lower_bound = moves_lower_bound(planner.load, planner.replica_targets)
    planner.evacuate()
    planner.repair_racks()
    stuck = planner.balance_replicas()
    leader_targets, _ = balance_leaders(planner.replicas, sorted(planner.target_set))
    result = PlanResult(planner.replicas, planner.replica_targets, leader_targets, moves_lower_bound=lower_bound,
                        moves_for_rack_diversity=planner.moves_for_rack_diversity, stuck_brokers=stuck)
    for index, (before, after) in enumerate(zip(planner.original, planner.replicas)):
        added = len(set(after) - set(before))
        result.moves += added
        result.bytes_moved += added * planner.sizes[index]
        if before and after and before[0] != after[0]:
            result.preferred_leader_changes += 1
    return result
