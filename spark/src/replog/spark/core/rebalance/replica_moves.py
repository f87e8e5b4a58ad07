"""Phases 1 to 3 of a rebalance plan: evacuate, repair rack diversity, balance replicas.

`ReplicaPlanner` holds the assignment being changed and the brokers' loads; every move
goes through `move` and is allowed only if it keeps rack diversity (`allowed`). Candidate
brokers come from one heap per rack (`_RackHeaps`), so a move costs O(racks log n).
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from typing import Mapping, Sequence

from .balance import PartitionLoad, PlanError, balanced_targets, racks_spanned


class ReplicaPlanner:
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

    def __init__(self, planner: ReplicaPlanner) -> None:
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
