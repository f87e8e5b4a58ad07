"""The client's partition assignors: range, round-robin and cooperative sticky."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.client.group.assignors import (
    ASSIGNORS,
    COOPERATIVE_STICKY,
    Subscription,
    assign,
    cooperative_sticky_assign,
    range_assign,
    round_robin_assign,
)
from replog.common.core.partitions import TopicPartition


def tps(topic, *partitions):
    return tuple(TopicPartition(topic, p) for p in partitions)


def members(*names, topics=("orders",), owned=None):
    owned = owned or {}
    return [Subscription(n, topics, owned.get(n, ())) for n in names]


def test_range_gives_each_member_a_contiguous_run_and_the_first_ones_the_remainder():
    result = range_assign(members("b", "a"), {"orders": 5}).by_member
    assert result == {"a": tps("orders", 0, 1, 2), "b": tps("orders", 3, 4)}


def test_round_robin_deals_partitions_to_members_subscribed_to_their_topic():
    subs = [Subscription("a", ("orders", "pay")), Subscription("b", ("orders",))]
    result = round_robin_assign(subs, {"orders": 3, "pay": 2}).by_member
    assert result == {"a": tps("orders", 0, 2) + tps("pay", 0, 1), "b": tps("orders", 1)}


def test_sticky_moves_only_the_dead_members_partitions():
    before = {"a": tps("orders", 0, 1, 2, 3), "b": tps("orders", 4, 5, 6, 7), "c": tps("orders", 8, 9, 10, 11)}
    result = cooperative_sticky_assign(members("a", "b", owned=before), {"orders": 12})
    assert set(before["a"]) <= set(result.by_member["a"]) and set(before["b"]) <= set(result.by_member["b"])
    assert sorted(result.by_member["a"] + result.by_member["b"]) == list(tps("orders", *range(12)))
    assert result.withheld == ()  # c is gone: nobody has to revoke anything


def test_cooperative_a_new_member_gets_moved_partitions_only_after_their_owners_revoked_them():
    before = {"a": tps("orders", *range(0, 6)), "b": tps("orders", *range(6, 12))}
    first = cooperative_sticky_assign(members("a", "b", "c", owned=before), {"orders": 12})
    assert first.by_member["c"] == () and len(first.withheld) == 4  # two from each owner
    for m in ("a", "b"):
        assert set(first.by_member[m]) < set(before[m])  # only revocations: nothing new, most kept
    # the owners revoked; everyone rejoins with what it owns now
    second = cooperative_sticky_assign(members("a", "b", "c", owned=first.by_member), {"orders": 12})
    assert second.withheld == () and len(second.by_member["c"]) == 4
    assert {m: len(v) for m, v in second.by_member.items()} == {"a": 4, "b": 4, "c": 4}


def test_a_partition_claimed_by_two_members_is_kept_by_one():
    owned = {"a": tps("orders", 0), "b": tps("orders", 0)}
    result = cooperative_sticky_assign(members("a", "b", owned=owned), {"orders": 2})
    assert sorted(result.by_member["a"] + result.by_member["b"] + result.withheld) == list(tps("orders", 0, 1))


def test_an_unknown_assignor_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown assignor 'sticky'"):
        assign("sticky", members("a"), {"orders": 1})


subscriptions = st.lists(
    st.tuples(st.sampled_from(["m1", "m2", "m3", "m4", "m5"]),
              st.sets(st.sampled_from(["t1", "t2", "t3"]), min_size=1)),
    min_size=1, max_size=5, unique_by=lambda x: x[0])
counts = st.fixed_dictionaries({"t1": st.integers(0, 12), "t2": st.integers(0, 5), "t3": st.integers(0, 7)})


@settings(max_examples=200, deadline=None)
@given(subscriptions, counts, st.sampled_from(ASSIGNORS), st.randoms(use_true_random=False))
def test_every_partition_goes_to_exactly_one_subscribed_member(subs, partition_counts, name, rng):
    every = [TopicPartition(t, p) for t in ("t1", "t2", "t3") for p in range(partition_counts[t])]
    owned = {m: tuple(tp for tp in every if rng.random() < 0.3) for m, _ in subs}
    subs = [Subscription(m, tuple(sorted(topics)), owned[m] if name == COOPERATIVE_STICKY else ())
            for m, topics in subs]
    result = assign(name, subs, partition_counts)
    handed = [tp for member in result.by_member.values() for tp in member] + list(result.withheld)
    wanted = [tp for tp in every if any(tp.topic in s.topics for s in subs)]
    assert sorted(handed) == sorted(wanted)
    topics_of = {s.member_id: set(s.topics) for s in subs}
    assert all(tp.topic in topics_of[m] for m, member in result.by_member.items() for tp in member)
    if name == COOPERATIVE_STICKY:  # nothing is handed to a member while another still owns it
        for m, member in result.by_member.items():
            assert not any(tp in s.owned for s in subs if s.member_id != m for tp in member)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 30), st.sampled_from(ASSIGNORS))
def test_with_one_subscription_for_all_the_shares_differ_by_at_most_one(n, partitions, name):
    result = assign(name, members(*[f"m{i}" for i in range(n)]), {"orders": partitions})
    sizes = [len(v) for v in result.by_member.values()]
    assert max(sizes) - min(sizes) <= 1
