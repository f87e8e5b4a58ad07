"""Phase 4 of a rebalance plan: balance preferred leaders by reordering replica lists.

No data moves: a partition's first replica is its preferred leader, and handing that place
to another replica of the same partition changes only who leads. Direct swaps first, then
smoothing passes, then augmenting paths, within a bounded amount of work.
"""

from __future__ import annotations

from typing import Sequence

from .balance import balanced_targets


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
