"""The rebalance core: balance, rack diversity, and moves against the lower bound."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.spark.core import rebalance
from replog.spark.core.rebalance import PartitionLoad

SIX = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
NINE = {**SIX, 7: "a", 8: "b", 9: "c"}


def round_robin(racks, partitions, rf, size=lambda p: 1000):
    by_rack = {}
    for b in sorted(racks):
        by_rack.setdefault(racks[b], []).append(b)
    order = [q[i] for i in range(max(map(len, by_rack.values()))) for q in by_rack.values() if i < len(q)]
    n = len(order)
    return [PartitionLoad(f"t{p // 100}", p % 100, tuple(order[(p + k) % n] for k in range(rf)), size(p))
            for p in range(partitions)]


def counts(replicas):
    return Counter(b for r in replicas for b in r), Counter(r[0] for r in replicas)


def assert_balanced(result, brokers, partitions, rf):
    replicas, leaders = counts(result.replicas)
    replica_mean = partitions * rf / len(brokers)
    leader_mean = partitions / len(brokers)
    for b in brokers:
        assert abs(replicas[b] - replica_mean) < 1, (b, replicas[b], replica_mean)
        assert abs(leaders[b] - leader_mean) < 1, (b, leaders[b], leader_mean)


def test_acceptance_six_brokers_three_racks_600_partitions_rf3_grow_to_nine():
    partitions = round_robin(SIX, 600, 3, size=lambda p: 1000 + p)
    result = rebalance.plan(partitions, NINE, list(NINE))

    assert_balanced(result, list(NINE), 600, 3)
    replicas, _ = counts(result.replicas)
    assert all(replicas[b] == 200 for b in NINE)               # 1800 / 9: the counts divide
    assert rebalance.rack_violations(result.replicas, NINE, 3) == 0
    # Six brokers each lose 300 - 200 replicas: the lower bound is 600, and the plan meets it.
    assert result.moves_lower_bound == 600
    assert result.moves <= result.moves_lower_bound * 1.05
    assert result.moves == 600
    assert result.stuck_brokers == []
    assert result.bytes_moved == sum(
        (1000 + i) * len(set(after) - set(p.replicas)) for i, (p, after) in enumerate(zip(partitions, result.replicas)))


def test_moves_only_what_must_move_and_keeps_order_of_kept_replicas():
    partitions = round_robin(SIX, 60, 3)
    result = rebalance.plan(partitions, NINE, list(NINE))
    for before, after in zip(partitions, result.replicas):
        kept = [b for b in after if b in before.replicas]
        assert len(set(after)) == 3
        # A reorder only ever brings a new preferred leader to the front.
        assert kept == [b for b in before.replicas if b in after] or after[0] in before.replicas


def test_a_balanced_cluster_needs_no_move():
    result = rebalance.plan(round_robin(SIX, 600, 3), SIX, list(SIX))
    assert (result.moves, result.moves_lower_bound, result.preferred_leader_changes) == (0, 0, 0)


def test_removing_a_broker_moves_exactly_its_replicas_within_its_rack():
    racks = {**SIX, 7: "a", 8: "b", 9: "c"}
    partitions = round_robin(racks, 900, 3)
    result = rebalance.plan(partitions, racks, [b for b in racks if b != 9])
    replicas, _ = counts(result.replicas)
    assert replicas[9] == 0
    assert result.moves == result.moves_lower_bound == 300
    assert rebalance.rack_violations(result.replicas, racks, 3) == 0
    # Rack c keeps one replica of every partition on its two remaining brokers.
    assert replicas[3] == replicas[6] == 450


def test_lower_bound_counts_leaving_brokers_and_excess_over_targets():
    current = Counter({1: 10, 2: 4, 3: 1})
    targets = rebalance.balanced_targets(current, [1, 2, 4], 15)
    assert targets == {1: 5, 2: 5, 4: 5}
    # Broker 3 leaves (1 move), broker 1 must lose 5.
    assert rebalance.moves_lower_bound(current, targets) == 6


def test_the_extra_replica_goes_to_the_broker_holding_most():
    assert rebalance.balanced_targets(Counter({1: 9, 2: 2}), [1, 2, 3], 11) == {1: 4, 2: 4, 3: 3}


def test_a_rack_violation_is_repaired():
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    partitions = [PartitionLoad("t", 0, (1, 2), 10), PartitionLoad("t", 1, (3, 4), 10),
                  PartitionLoad("t", 2, (1, 3), 10), PartitionLoad("t", 3, (2, 4), 10)]
    assert rebalance.rack_violations([p.replicas for p in partitions], racks, 2) == 2
    result = rebalance.plan(partitions, racks, [1, 2, 3, 4])
    assert rebalance.rack_violations(result.replicas, racks, 2) == 0
    assert result.moves_for_rack_diversity == 2


def test_preferred_leaders_balance_by_reordering_only():
    # Replicas are balanced (4 each) but broker 1 is preferred for 4 of the 6 partitions.
    partitions = [PartitionLoad("t", p, (1, 2 + p % 2), 1) for p in range(4)] + \
                 [PartitionLoad("u", 0, (2, 3), 1), PartitionLoad("u", 1, (3, 2), 1)]
    result = rebalance.plan(partitions, {1: None, 2: None, 3: None}, [1, 2, 3])
    assert result.moves == 0
    _, leaders = counts(result.replicas)
    assert sorted(leaders.values()) == [2, 2, 2]


def test_too_few_brokers_for_the_replication_factor_is_refused():
    with pytest.raises(rebalance.PlanError, match="replication factor of 3 needs at least 3 brokers"):
        rebalance.plan(round_robin(SIX, 6, 3), SIX, [1, 2])


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 8), st.integers(1, 4), st.integers(1, 3), st.integers(1, 120), st.integers(0, 2**16))
def test_random_clusters_end_balanced_without_breaking_diversity(brokers, added, rf, partitions, seed):
    """No racks: any plan is balanced in replicas and preferred leaders, and meets the lower bound."""
    import random

    rng = random.Random(seed)
    rf = min(rf, brokers)
    loads = [PartitionLoad("t", p, tuple(rng.sample(range(1, brokers + 1), rf)), rng.randrange(100))
             for p in range(partitions)]
    targets = list(range(1, brokers + added + 1))
    result = rebalance.plan(loads, {b: None for b in targets}, targets)
    assert_balanced(result, targets, partitions, rf)
    assert result.moves == result.moves_lower_bound
    assert all(len(set(r)) == len(r) == rf for r in result.replicas)


def test_preferred_leaders_balance_when_the_targeted_brokers_cannot_all_lead():
    # Found by the property test above (8 brokers + 1, RF 2, 6 partitions, seed 501): the targets
    # give the extra leaderships to brokers that no reordering lets all lead; others can.
    import random

    rng = random.Random(501)
    loads = [PartitionLoad("t", p, tuple(rng.sample(range(1, 9), 2)), rng.randrange(100)) for p in range(6)]
    targets = list(range(1, 10))
    result = rebalance.plan(loads, {b: None for b in targets}, targets)
    assert_balanced(result, targets, 6, 2)
    _, leaders = counts(result.replicas)
    assert all(result.leader_targets[b] == leaders[b] for b in targets)
