"""Kafka's topic-name rules and the four kafka-topics health flags."""

from __future__ import annotations

import pytest

from replog.common.topic_admin.core.health import Filter, partition_health
from replog.common.topic_admin.core.names import check_topic_name, collision_key
from replog.common.topic_admin.core.refusal import Refusal, Status
from replog.common.zk.schema import PartitionStateRecord


@pytest.mark.parametrize("name", ["a", "orders", "A.b_c-9", "x" * 249, "..."])
def test_legal_topic_names(name):
    check_topic_name(name)


@pytest.mark.parametrize("name, fragment", [
    ("", "can't be empty"),
    (".", "'.'"),
    ("..", "'..'"),
    ("x" * 250, "250 characters"),
    ("a/b", "'/'"),
    ("caf\u00e9", "'\u00e9'"),
    ("two words", "' '"),
])
def test_illegal_topic_names_are_invalid_argument_naming_the_problem(name, fragment):
    with pytest.raises(Refusal) as refused:
        check_topic_name(name)
    assert refused.value.status is Status.INVALID_ARGUMENT
    assert fragment in refused.value.message


def test_dot_and_underscore_collide():
    assert collision_key("a.b") == collision_key("a_b") != collision_key("a-b")


def state(leader, isr, leader_epoch=3):
    return PartitionStateRecord(leader=leader, leader_epoch=leader_epoch, isr=tuple(isr), controller_epoch=1)


LIVE = frozenset({1, 2, 3})


def test_healthy_partition_has_no_flag_but_at_min_isr_when_isr_equals_min():
    h = partition_health((1, 2, 3), (), state(1, [1, 2, 3]), LIVE, min_insync_replicas=2)
    assert (h.unavailable, h.under_replicated, h.under_min_isr, h.at_min_isr) == (False, False, False, False)
    h = partition_health((1, 2, 3), (), state(1, [1, 2]), LIVE, min_insync_replicas=2)
    assert (h.under_replicated, h.under_min_isr, h.at_min_isr) == (True, False, True)


def test_leader_not_alive_is_unavailable_and_names_offline_replicas():
    h = partition_health((1, 2, 3), (), state(3, [3]), frozenset({1, 2}), min_insync_replicas=1)
    assert h.unavailable and h.offline_replicas == (3,)
    assert not h.under_min_isr   # a leader is recorded (Kafka: only no leader at all counts)


def test_no_state_yet_means_offline_with_empty_isr():
    h = partition_health((1, 2), (), None, LIVE, min_insync_replicas=1)
    assert (h.leader, h.leader_epoch, h.isr) == (-1, -1, ())
    assert h.unavailable and h.under_replicated and h.under_min_isr and not h.at_min_isr


def test_offline_leader_counts_as_under_min_isr_like_kafka():
    h = partition_health((1, 2, 3), (), state(-1, [1, 2, 3]), LIVE, min_insync_replicas=2)
    assert h.unavailable and h.under_min_isr and not h.under_replicated


def test_a_leader_from_an_unclean_election_is_flagged_until_the_next_leader_change():
    elected = PartitionStateRecord(3, 6, (3,), 2, unclean_leader_epoch=6)
    assert partition_health((1, 2, 3), (), elected, LIVE, min_insync_replicas=1).unclean_leader
    moved_on = PartitionStateRecord(1, 7, (1,), 2, unclean_leader_epoch=6)
    assert not partition_health((1, 2, 3), (), moved_on, LIVE, min_insync_replicas=1).unclean_leader
    assert not partition_health((1, 2, 3), (), state(1, [1, 2, 3]), LIVE, min_insync_replicas=2).unclean_leader


def test_the_eligible_leader_replicas_are_shown_as_the_state_has_them():
    offline = PartitionStateRecord(-1, 6, (1,), 2, elr=(2,))
    h = partition_health((1, 2, 3), (), offline, LIVE, min_insync_replicas=2)
    assert h.elr == (2,) and h.unavailable
    assert partition_health((1, 2, 3), (), None, LIVE, min_insync_replicas=2).elr == ()


def test_replicas_being_added_do_not_make_a_partition_under_replicated():
    # Reassigning [1,2,3] -> [4,5,6]: assigned is target + original while it runs.
    h = partition_health((4, 5, 6, 1, 2, 3), (4, 5, 6), state(1, [1, 2, 3]), LIVE | {4, 5, 6}, 1)
    assert not h.under_replicated


@pytest.mark.parametrize("wanted, expected", [
    (Filter.NONE, True), (Filter.UNAVAILABLE, False), (Filter.UNDER_REPLICATED, True),
    (Filter.UNDER_MIN_ISR, True), (Filter.AT_MIN_ISR, False),
])
def test_filters_select_by_flag(wanted, expected):
    h = partition_health((1, 2, 3), (), state(1, [1]), LIVE, min_insync_replicas=2)
    assert h.matches(wanted) is expected
