"""Rebalance planning: a new replica assignment that is balanced and moves little.

Theory of operation
-------------------
Input: every partition's replica list (preference order) and size, the rack of
every broker, and the target broker set (the brokers after adding and removing).
Output: a new replica list per partition. A **move** is a replica added to a
broker that did not hold it (its data must be copied); reordering a list moves
nothing but changes the preferred leader.

Balance means: every target broker holds ``floor(R/n)`` or ``ceil(R/n)`` of the
``R`` replicas, and is the preferred (first) replica of ``floor(P/n)`` or
``ceil(P/n)`` of the ``P`` partitions — within one of the mean, exactly the
mean when the counts divide. The ``R mod n`` brokers allowed the extra replica
are the ones holding the most today, which minimises what must leave.

**Lower bound on moves.** A move takes one replica off one broker. Every replica
on a broker leaving the set must move, and a target broker holding ``c``
replicas with target ``t`` must lose at least ``c - t``. So any balanced plan
makes at least ``sum over leaving brokers of c + sum over targets of max(0, c - t)``
moves. The plan below makes exactly that many when nothing blocks it (each
move goes from a broker over its target to one under it); rack diversity can
force extra moves, which the summary reports as the gap.

**Rack diversity**: a partition spans at least ``min(RF, racks)`` distinct racks
(a broker without a rack spans none). A move is allowed only if it does not
reduce the racks a partition spans below ``min(required, spanned before)``:
plans never break diversity and never make a violating partition worse.

Phases, each greedy (this is a heuristic, not an optimiser; the lower bound
tells how far from optimal it ends up). Phases 1 to 3 are ``replica_moves.py``,
phase 4 is ``preferred_leaders.py``, and ``phases.py`` runs them in order (``plan``);
``balance.py`` holds the rules above (targets, the lower bound, racks spanned):

1. **Evacuate** replicas on brokers outside the target set, biggest partitions
   first, each to the allowed broker furthest under its target (same rack first).
2. **Repair** partitions that violate rack diversity: one replica from a
   repeated rack moves to an under-loaded broker in a rack the partition lacks.
3. **Balance replicas**: while a broker is over its target, move its smallest
   partition (fewest bytes) to the allowed broker furthest under target.
   Candidates come from one heap per rack, so a move costs O(racks log n).
4. **Balance preferred leaders**: reorder replica lists (no data moves) — first
   direct swaps with an under-target replica of the same partition, then
   smoothing passes, then augmenting paths (leadership passed along a chain of
   partitions), which reach the targets whenever the assignment allows it
   within a bounded number of rounds (a bound on work for a million partitions;
   what is left shows as the plan's preferred-leader skew). When the brokers
   targeted for the extra leaderships cannot all take one, other brokers do.

Cost: a few seconds for 100,000 partitions; about a minute for 1,000,000
partitions on 1,000 brokers when brokers are added, longer when racks make
balance impossible (every round then searches the whole graph).

Pure: no Spark, no I/O; ``replog.spark.planner`` collects the export into
these tuples and turns the result back into DataFrames. Deterministic: ties
break on ids. Import from here: ``from replog.spark.core import rebalance``.
"""

from .balance import (
    PartitionLoad,
    PlanError,
    PlanResult,
    balanced_targets,
    moves_lower_bound,
    rack_violations,
    racks_spanned,
)
from .phases import plan
from .preferred_leaders import balance_leaders

__all__ = [
    "PartitionLoad",
    "PlanError",
    "PlanResult",
    "balance_leaders",
    "balanced_targets",
    "moves_lower_bound",
    "plan",
    "rack_violations",
    "racks_spanned",
]
