"""Replica placement: Kafka's assignReplicasToBrokers, pinned to outputs worked out by hand."""

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.common.core.errors import (
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
)
from replog.common.core.placement import (
    assign_new_partitions,
    assign_replicas_to_brokers,
    rack_alternated_broker_list,
    replica_index,
    validate_replica_assignment,
)


def unaware(*ids):
    return {i: None for i in ids}


# --- exact outputs ---------------------------------------------------------------


def test_five_brokers_ten_partitions_rf3_start0_matches_kafka():
    # First replicas go round robin from broker 0; the followers sit at offset
    # 1 + (shift + j) % 4, and the shift grows from 0 to 1 at partition 5.
    assert assign_replicas_to_brokers(unaware(0, 1, 2, 3, 4), 10, 3, start_index=0) == {
        0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
        5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
    }


def test_start_index_and_replica_shift_are_independent_when_both_given():
    # 3 brokers, RF 2, start 2, shift 1; the shift becomes 2 at partition 3.
    assert assign_replicas_to_brokers(unaware(0, 1, 2), 6, 2, start_index=2, replica_shift=1) == {
        0: (2, 1), 1: (0, 2), 2: (1, 0), 3: (2, 0), 4: (0, 1), 5: (1, 2),
    }


def test_brokers_are_taken_in_id_order_whatever_the_mapping_order():
    assert assign_replicas_to_brokers({4: None, 0: None, 2: None}, 3, 2, start_index=0) == \
        assign_replicas_to_brokers({0: None, 2: None, 4: None}, 3, 2, start_index=0) == {
            0: (0, 2), 1: (2, 4), 2: (4, 0)}


def test_replica_index_never_lands_on_the_first_replica():
    for n in range(2, 9):
        for first in range(n):
            for shift in range(3 * n):
                for j in range(n - 1):
                    assert replica_index(first, shift, j, n) != first


def test_rack_alternated_list_takes_one_broker_per_rack_in_turn():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == (0, 3, 1, 5, 4, 2)
    uneven = {0: "a", 1: "a", 2: "a", 3: "b"}
    assert rack_alternated_broker_list(uneven) == (0, 3, 1, 2)


def test_rack_aware_six_brokers_three_racks_matches_kafka():
    # Kafka's documented example: list 0,3,1,5,4,2; partition 6 starts the
    # second round with the shift grown to 1 (times 3 racks).
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert assign_replicas_to_brokers(racks, 7, 3, start_index=0) == {
        0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2),
        4: (4, 2, 0),  # broker 3 is skipped: rack2 already holds the leader
        5: (2, 0, 3), 6: (0, 4, 2),
    }


def test_rack_aware_with_uneven_racks_skips_until_every_rack_has_a_replica():
    # list 0,3,1,2 (racks a,b,a,a).  Partition 2 leads on 1 (a): 2 and 0 are
    # skipped (rack a taken, rack b empty) until 3 (b); then 2 is fine.
    racks = {0: "a", 1: "a", 2: "a", 3: "b"}
    assert assign_replicas_to_brokers(racks, 3, 3, start_index=0) == {
        0: (0, 3, 1), 1: (3, 1, 2), 2: (1, 3, 2)}


def test_random_start_and_shift_come_from_the_rng_in_kafkas_order():
    draw = random.Random(42)
    start, shift = draw.randrange(5), draw.randrange(5)
    assert assign_replicas_to_brokers(unaware(*range(5)), 12, 3, random.Random(42)) == \
        assign_replicas_to_brokers(unaware(*range(5)), 12, 3, start_index=start, replica_shift=shift)


def test_a_fixed_start_index_also_fixes_the_shift_as_in_kafka():
    assert assign_replicas_to_brokers(unaware(*range(4)), 8, 3, start_index=2) == \
        assign_replicas_to_brokers(unaware(*range(4)), 8, 3, start_index=2, replica_shift=2)


# --- errors -----------------------------------------------------------------------


@pytest.mark.parametrize("partitions, rf, error, message", [
    (0, 1, InvalidPartitionsError, "Number of partitions must be larger than 0."),
    (-3, 1, InvalidPartitionsError, "Number of partitions must be larger than 0."),
    (3, 0, InvalidReplicationFactorError, "Replication factor must be larger than 0."),
    (3, 4, InvalidReplicationFactorError, "Replication factor: 4 larger than available brokers: 3."),
])
def test_bad_counts_are_refused_with_kafkas_messages(partitions, rf, error, message):
    with pytest.raises(error) as raised:
        assign_replicas_to_brokers(unaware(1, 2, 3), partitions, rf, start_index=0)
    assert str(raised.value) == message


def test_mixed_rack_information_is_refused_naming_the_brokers_without_rack():
    with pytest.raises(InvalidRequestError, match=r"Not all brokers have rack information.*without a rack: 2, 3"):
        assign_replicas_to_brokers({1: "r1", 2: None, 3: None}, 3, 2, start_index=0)


def test_negative_start_index_is_refused():
    with pytest.raises(InvalidRequestError, match="start index must be 0 or more"):
        assign_replicas_to_brokers(unaware(1, 2), 1, 1, start_index=-1)


def test_a_random_start_needs_a_random_source():
    with pytest.raises(ValueError):
        assign_replicas_to_brokers(unaware(1, 2), 1, 1)


# --- adding partitions --------------------------------------------------------------


def test_added_partitions_continue_from_partition_zeros_preferred_broker():
    # Partition 0 leads on broker 3: start = index of broker 3 in 0..4 = 3, and
    # (as in Kafka) the shift is fixed to the start too.
    existing = {0: (3, 4), 1: (4, 0), 2: (0, 1)}
    assert assign_new_partitions("t", existing, 5, unaware(*range(5))) == {3: (1, 0), 4: (2, 1)}


def test_added_partitions_start_at_the_first_broker_at_or_above_the_old_preferred():
    # Broker 2 is gone; the next id up (3, at index 2) is the start.
    existing = {0: (2, 0)}
    assert assign_new_partitions("t", existing, 2, unaware(0, 1, 3)) == \
        assign_replicas_to_brokers(unaware(0, 1, 3), 1, 2, start_index=2, start_partition_id=1)


def test_partitions_can_only_be_added():
    with pytest.raises(InvalidPartitionsError) as raised:
        assign_new_partitions("orders", {0: (1,), 1: (2,)}, 2, unaware(1, 2))
    assert str(raised.value) == ("The number of partitions for a topic can only be increased. "
                                 "Topic orders currently has 2 partitions, 2 would not be an increase.")


def test_explicit_added_partitions_must_match_the_topics_replication_factor():
    with pytest.raises(InvalidReplicaAssignmentError, match=r"partition 0 has 2 while partitions \[2\]"):
        assign_new_partitions("t", {0: (1, 2), 1: (2, 3)}, 3, unaware(1, 2, 3), explicit={2: (1,)})
    assert assign_new_partitions("t", {0: (1, 2)}, 2, unaware(1, 2, 3), explicit={1: [3, 1]}) == {1: (3, 1)}


# --- explicit assignments ------------------------------------------------------------


def test_valid_explicit_assignment_is_normalised():
    assert validate_replica_assignment({1: [2, 3], 0: [1, 2]}, {1, 2, 3}) == {0: (1, 2), 1: (2, 3)}


@pytest.mark.parametrize("assignment, error, message", [
    ({}, InvalidReplicaAssignmentError, "names no partitions"),
    ({0: []}, InvalidReplicaAssignmentError, "Cannot have replication factor of 0 for partition id 0."),
    ({0: [1, 1]}, InvalidReplicaAssignmentError,
     "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 0."),
    ({0: [1, 9]}, BrokerNotAvailableError,
     "Some brokers specified for partition id 0 are not available. "
     "Specified brokers: 1, 9, available brokers: 1, 2, 3."),
    ({0: [1, 2], 1: [3]}, InvalidReplicaAssignmentError,
     "Inconsistent replication factor between partitions, partition 0 has 2 while "
     "partitions [1] have replication factors [1], respectively."),
    ({0: [1], 2: [2]}, InvalidReplicaAssignmentError, "missing [1], unexpected [2]"),
])
def test_explicit_assignment_errors(assignment, error, message):
    with pytest.raises(error) as raised:
        validate_replica_assignment(assignment, {1, 2, 3})
    assert message in str(raised.value)


# --- properties ----------------------------------------------------------------------


@st.composite
def placements(draw, rack_aware):
    broker_ids = draw(st.sets(st.integers(0, 40), min_size=1, max_size=12))
    if rack_aware:
        rack_count = draw(st.integers(1, len(broker_ids)))
        brokers = {b: f"rack-{draw(st.integers(0, rack_count - 1))}" for b in broker_ids}
    else:
        brokers = {b: None for b in broker_ids}
    rf = draw(st.integers(1, len(broker_ids)))
    partitions = draw(st.integers(1, 4 * len(broker_ids)))
    start = draw(st.integers(0, 3 * len(broker_ids)))
    shift = draw(st.integers(0, 3 * len(broker_ids)))
    return brokers, partitions, rf, start, shift


def _place(brokers, partitions, rf, start, shift):
    return assign_replicas_to_brokers(brokers, partitions, rf, start_index=start, replica_shift=shift)


@settings(max_examples=300, deadline=None)
@given(placements(rack_aware=False) | placements(rack_aware=True))
def test_every_partition_gets_rf_distinct_known_brokers(case):
    brokers, partitions, rf, start, shift = case
    result = _place(*case)
    assert sorted(result) == list(range(partitions))
    for replicas in result.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)


@settings(max_examples=300, deadline=None)
@given(placements(rack_aware=True))
def test_rack_aware_partitions_span_min_of_racks_and_rf(case):
    brokers, partitions, rf, start, shift = case
    racks = len(set(brokers.values()))
    for replicas in _place(*case).values():
        assert len({brokers[b] for b in replicas}) == min(racks, rf)


@settings(max_examples=300, deadline=None)
@given(placements(rack_aware=False) | placements(rack_aware=True))
def test_leaders_are_even(case):
    """Leaders (first replicas) differ by at most one between brokers for any
    partition count, and are exactly partitions / brokers each when the count
    is a multiple of the number of brokers."""
    brokers, partitions, rf, start, shift = case
    leaders = Counter(replicas[0] for replicas in _place(*case).values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1
    if partitions % len(brokers) == 0:
        assert set(counts) == {partitions // len(brokers)}


@settings(max_examples=300, deadline=None)
@given(placements(rack_aware=False))
def test_rack_unaware_replicas_are_exactly_even_when_partitions_are_a_multiple_of_brokers(case):
    """Within each round of len(brokers) partitions the shift is fixed, so the
    j-th follower also visits every broker once: each broker then holds exactly
    partitions * RF / brokers replicas."""
    brokers, partitions, rf, start, shift = case
    partitions = len(brokers) * max(1, partitions // len(brokers))
    held = Counter(b for replicas in _place(brokers, partitions, rf, start, shift).values() for b in replicas)
    assert {held[b] for b in brokers} == {partitions * rf // len(brokers)}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 5), st.integers(0, 30), st.integers(0, 30))
def test_rack_aware_replicas_are_even_when_racks_are_equal_and_rf_is_the_rack_count(
        rack_count, per_rack, rounds, start, shift):
    """Kafka's 'perfect situation': equal racks and RF = racks gives every broker
    the same number of replicas (partition count a multiple of the brokers)."""
    brokers = {r * per_rack + i: f"rack-{r}" for r in range(rack_count) for i in range(per_rack)}
    partitions = rounds * len(brokers)
    held = Counter(b for replicas in _place(brokers, partitions, rack_count, start, shift).values()
                   for b in replicas)
    assert {held[b] for b in brokers} == {partitions * rack_count // len(brokers)}
