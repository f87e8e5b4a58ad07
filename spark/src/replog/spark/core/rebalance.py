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
tells how far from optimal it ends up):

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

Pure: no Spark, no I/O; ``planner.py`` collects the export into these tuples
and turns the result back into DataFrames. Deterministic: ties break on ids.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
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


class _Planner:
    def __init__(self, partitions: Sequence[PartitionLoad], rack_of: Mapping[int, str | None],
                 targets: Sequence[int]) -> None:
        self.sizes = [max(0, p.size_bytes) for p in partitions]
        self.original = [tuple(p.replicas) for p in partitions]
        self.replicas = [list(p.replicas) for p in partitions]
        self.rack_of = dict(rack_of)
        self.target_set = set(targets)
        self.racks = sorted({self.rack_of.get(b) for b in targets} - {None})
        self.load = Counter(b for r in self.replicas for b in r)
        self.bytes_load = Counter()
        for index, replicas in enumerate(self.replicas):
            for b in replicas:
                self.bytes_load[b] += self.sizes[index]
        self.hosted: dict[int, set[int]] = {b: set() for b in set(self.load) | self.target_set}
        for index, replicas in enumerate(self.replicas):
            for b in replicas:
                self.hosted[b].add(index)
        self.replica_targets = balanced_targets(self.load, sorted(targets), sum(self.load.values()))
        self.moves_for_rack_diversity = 0

    # --- rules -------------------------------------------------------------------------------

    def required(self, index: int) -> int:
        return min(len(self.replicas[index]), len(self.racks))

    def spanned(self, replicas: Sequence[int]) -> int:
        return racks_spanned(replicas, self.rack_of)

    def allowed(self, index: int, leaving: int, arriving: int) -> bool:
        replicas = self.replicas[index]
        if arriving in replicas or arriving not in self.target_set:
            return False
        before = self.spanned(replicas)
        after = self.spanned([arriving if b == leaving else b for b in replicas])
        return after >= min(self.required(index), before)

    def excess(self, broker: int) -> int:
        return self.load[broker] - self.replica_targets.get(broker, 0)

    def move(self, index: int, leaving: int, arriving: int) -> None:
        replicas = self.replicas[index]
        replicas[replicas.index(leaving)] = arriving
        size = self.sizes[index]
        self.load[leaving] -= 1
        self.load[arriving] += 1
        self.bytes_load[leaving] -= size
        self.bytes_load[arriving] += size
        self.hosted[leaving].discard(index)
        self.hosted[arriving].add(index)

    def candidates(self, leaving: int) -> list[int]:
        """Target brokers ordered: furthest under target, same rack as ``leaving``, fewest bytes, id."""
        rack = self.rack_of.get(leaving)
        return sorted(self.target_set, key=lambda b: (self.excess(b), self.rack_of.get(b) != rack,
                                                      self.bytes_load[b], b))

    # --- phases ------------------------------------------------------------------------------

    def evacuate(self) -> None:
        heaps = _RackHeaps(self)
        leaving = [b for b in self.hosted if b not in self.target_set and self.hosted[b]]
        for broker in sorted(leaving):
            for index in sorted(self.hosted[broker], key=lambda i: (-self.sizes[i], i)):
                # Under-target brokers can take every leaving replica (targets add up to the
                # total), so the heaps almost always answer; the full scan is the fallback.
                choice = heaps.best_for(index, broker)
                if choice is not None:
                    self.move(index, broker, choice)
                    heaps.update(choice)
                    continue
                ranked = self.candidates(broker)
                choice = next((b for b in ranked if self.allowed(index, broker, b)), None)
                if choice is None:
                    # Diversity cannot be kept; the replica must still leave.
                    choice = next((b for b in ranked if b not in self.replicas[index]), None)
                if choice is None:
                    raise PlanError(f"partition {index} has more replicas than the {len(self.target_set)} "
                                    f"target brokers")
                self.move(index, broker, choice)

    def repair_racks(self) -> None:
        for index, replicas in enumerate(self.replicas):
            while self.spanned(replicas) < self.required(index):
                present = Counter(self.rack_of.get(b) for b in replicas)
                # Leave from a repeated rack (or a rackless broker), the most loaded first.
                leavers = sorted((b for b in replicas if self.rack_of.get(b) is None
                                  or present[self.rack_of.get(b)] > 1), key=lambda b: (-self.excess(b), b))
                missing = set(self.racks) - set(present)
                arrivals = sorted((b for b in self.target_set if self.rack_of.get(b) in missing),
                                  key=lambda b: (self.excess(b), self.bytes_load[b], b))
                if not leavers or not arrivals:
                    break
                self.move(index, leavers[0], arrivals[0])
                self.moves_for_rack_diversity += 1

    def balance_replicas(self) -> list[int]:
        """Always move from the broker furthest over target (a heap), smallest partition first.

        A move only goes to a broker under its target, so no broker becomes over again.
        Taking turns matters when racks make full balance impossible (a rack with too few
        brokers for its share): the excess then stays spread over that rack's brokers instead
        of piling on the last ones visited."""
        heaps = _RackHeaps(self)
        overs = [(-self.excess(b), b) for b in self.target_set if self.excess(b) > 0]
        heapq.heapify(overs)
        queues: dict[int, deque] = {}
        stuck = []
        while overs:
            _, broker = heapq.heappop(overs)
            queue = queues.get(broker)
            if queue is None:
                queue = queues[broker] = deque(sorted(self.hosted[broker], key=lambda i: (self.sizes[i], i)))
            moved = False
            while queue and not moved:
                index = queue.popleft()
                if index not in self.hosted[broker]:
                    continue
                choice = heaps.best_for(index, broker)
                if choice is not None:
                    self.move(index, broker, choice)
                    heaps.update(choice)
                    moved = True
            if not moved:
                stuck.append(broker)      # no partition of it may go to any under-target broker
            elif self.excess(broker) > 0:
                heapq.heappush(overs, (-self.excess(broker), broker))
        return sorted(stuck)


class _RackHeaps:
    """Under-target brokers per rack, most under first, with lazy deletion of stale entries."""

    def __init__(self, planner: _Planner) -> None:
        self.planner = planner
        self.heaps: dict[str | None, list] = {}
        for b in planner.target_set:
            self.update(b)

    def key(self, b: int) -> tuple:
        p = self.planner
        return (p.excess(b), p.bytes_load[b], b)

    def update(self, b: int) -> None:
        if self.planner.excess(b) < 0:
            heapq.heappush(self.heaps.setdefault(self.planner.rack_of.get(b), []), (self.key(b), b))

    def racks_for(self, index: int, leaving: int):
        """Racks a replica of this partition may go to without losing a rack it spans: its own
        rack, a rack the partition lacks, or any rack when its rack is repeated (or has none)."""
        p = self.planner
        present = Counter(p.rack_of.get(b) for b in p.replicas[index])
        own = p.rack_of.get(leaving)
        if own is None or present[own] > 1 or p.spanned(p.replicas[index]) > p.required(index):
            return self.heaps.keys()
        return [r for r in self.heaps if r == own or r not in present]

    def best_for(self, index: int, leaving: int) -> int | None:
        p = self.planner
        best = None
        for rack in self.racks_for(index, leaving):
            heap = self.heaps[rack]
            if not heap:
                continue
            found = self._top_allowed(heap, index, leaving)
            if found is None:
                continue
            rank = (p.excess(found), p.rack_of.get(found) != p.rack_of.get(leaving), p.bytes_load[found], found)
            if best is None or rank < best[0]:
                best = (rank, found)
        return best[1] if best else None

    def _top_allowed(self, heap: list, index: int, leaving: int) -> int | None:
        skipped = []
        found = None
        while heap:
            key, b = heap[0]
            if key != self.key(b) or self.planner.excess(b) >= 0:
                heapq.heappop(heap)          # stale: the broker's load changed since it was pushed
                continue
            if self.planner.allowed(index, leaving, b):
                found = b
                break
            skipped.append(heapq.heappop(heap))
            if len(skipped) >= 8:            # this partition fits nowhere in this rack's top brokers
                break
        for item in skipped:
            heapq.heappush(heap, item)
        return found


SMOOTHING_PASSES = 8
# Each augmenting round walks at most every (partition, replica) edge once; the rounds stop
# after about this many edge visits in all (small clusters get every round they need).
AUGMENTING_EDGE_VISITS_MAX = 30_000_000


def balance_leaders(replicas: list[list[int]], brokers: Sequence[int]) -> tuple[dict[int, int], int]:
    """Reorder replica lists (in place) so preferred-leader counts meet balanced targets.

    Returns the targets and how many partitions got a new preferred leader.
    """
    led: dict[int, set[int]] = {b: set() for b in brokers}
    for index, r in enumerate(replicas):
        if r:
            led.setdefault(r[0], set()).add(index)
    current = {b: len(s) for b, s in led.items()}
    targets = balanced_targets(current, sorted(brokers), sum(1 for r in replicas if r))
    count = dict(current)
    original_first = [r[0] if r else None for r in replicas]

    def hand_over(index: int, giver: int, taker: int) -> None:
        r = replicas[index]
        position = r.index(taker)
        r[0], r[position] = taker, giver
        led[giver].discard(index)
        led.setdefault(taker, set()).add(index)
        count[giver] -= 1
        count[taker] = count.get(taker, 0) + 1

    def over(b: int) -> bool:
        return count.get(b, 0) > targets.get(b, 0)

    def under(b: int) -> bool:
        return count.get(b, 0) < targets.get(b, 0)

    # Direct swaps: the over broker's partition has an under-target replica.
    for giver in sorted(led):
        for index in sorted(led[giver]):
            if not over(giver):
                break
            takers = [b for b in replicas[index][1:] if under(b)]
            if takers:
                hand_over(index, giver, min(takers, key=lambda b: (count.get(b, 0) - targets[b], b)))

    # Smoothing: pass leadership to a replica with at least two fewer (each pass lowers the sum
    # of squares, so the counts draw together and most over brokers get a neighbour under target).
    for _ in range(SMOOTHING_PASSES):
        passed = 0
        for index, r in enumerate(replicas):
            if not r:
                continue
            giver = r[0]
            taker = min(r[1:], key=lambda b: (count.get(b, 0), b), default=None)
            if taker is not None and count.get(taker, 0) + 1 < count[giver] and (over(giver) or under(taker)):
                hand_over(index, giver, taker)
                passed += 1
        if not passed:
            break

    # Augmenting paths: over broker -> ... -> under broker, leadership passed one partition per
    # hop (every broker in between gives one and takes one). One breadth-first search from all
    # over brokers at once per round, then every path of its tree that still applies. Rounds are
    # bounded: what is left over shows as the plan's preferred-leader skew.
    edges = max(1, sum(len(r) for r in replicas))

    def augment(over, under) -> None:
        for _ in range(max(10, AUGMENTING_EDGE_VISITS_MAX // edges)):
            overs = sorted(b for b in led if over(b))
            if not overs:
                break
            applied = 0
            for path in _leadership_paths(overs, led, replicas, under):
                source = path[0][1]
                if not over(source) or not under(path[-1][2]) or any(replicas[i][0] != frm for i, frm, _ in path):
                    continue   # an earlier path of this round changed it
                for index, frm, to in reversed(path):
                    hand_over(index, frm, to)
                applied += 1
            if not applied:
                break

    augment(over, under)
    # The targets also say which brokers take the `total mod n` extra leaderships; the replica
    # lists may not let exactly those brokers take them (8 + 1 brokers, 6 partitions of 2
    # replicas: broker 1 and 8 both targeted, one partition holding both). Any brokers may: first
    # no broker above the ceiling, then none below the floor; the targets then name who took them.
    floor, ceiling = min(targets.values()), max(targets.values())
    if any(not floor <= count.get(b, 0) <= ceiling for b in targets):
        augment(lambda b: count.get(b, 0) > ceiling, lambda b: count.get(b, 0) < ceiling)
        augment(lambda b: count.get(b, 0) > floor, lambda b: count.get(b, 0) < floor)
        if all(floor <= count.get(b, 0) <= ceiling for b in targets):
            targets = {b: count.get(b, 0) for b in targets}
    changed = sum(1 for index, r in enumerate(replicas) if r and r[0] != original_first[index])
    return targets, changed


def _leadership_paths(sources: list[int], led, replicas, under) -> list[list[tuple[int, int, int]]]:
    """Breadth-first over brokers from every source; an edge x -> y is a partition led by x that
    has y as a replica. Returns the tree's paths (index, from, to) from a source to each under broker."""
    parent: dict[int, tuple[int, int] | None] = {b: None for b in sources}
    level = list(sources)
    sinks = []
    while level and not sinks:     # level by level: stop at the shortest paths' depth
        following = []
        for x in level:
            for index in led.get(x, ()):
                for y in replicas[index][1:]:
                    if y in parent:
                        continue
                    parent[y] = (index, x)
                    if under(y):
                        sinks.append(y)
                    else:
                        following.append(y)
        level = following
    paths = []
    for sink in sinks:
        path = []
        node = sink
        while parent[node] is not None:
            index, frm = parent[node]
            path.append((index, frm, node))
            node = frm
        paths.append(list(reversed(path)))
    return paths


def plan(partitions: Sequence[PartitionLoad], rack_of: Mapping[int, str | None],
         targets: Sequence[int]) -> PlanResult:
    """The whole plan: evacuate, repair racks, balance replicas, balance preferred leaders."""
    if not targets:
        raise PlanError("the target broker set is empty")
    rf_max = max((len(p.replicas) for p in partitions), default=0)
    if rf_max > len(set(targets)):
        raise PlanError(f"a replication factor of {rf_max} needs at least {rf_max} brokers; "
                        f"the target set has {len(set(targets))}")
    planner = _Planner(partitions, rack_of, targets)
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
