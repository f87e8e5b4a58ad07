"""Topic decisions: every refusal carries the right status and names the bad value;
accepted requests produce exactly the records to write."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.common.error_codes import ErrorCode
from replog.common.topic_admin.core import topics
from replog.common.topic_admin.core.health import Filter
from replog.common.topic_admin.core.refusal import Refusal, Status


def refused(call, *args, **kwargs) -> Refusal:
    with pytest.raises(Refusal) as caught:
        call(*args, **kwargs)
    return caught.value


def create(view, **fields):
    return topics.plan_create_topic(view, topics.CreateTopic(**fields), random.Random(7))


ORDERS = {"orders": {"partitions": {0: [1, 2], 1: [2, 3]}}}


@pytest.mark.parametrize("fields, status, fragment", [
    ({"name": "bad name", "partitions": 1, "replication_factor": 1}, Status.INVALID_ARGUMENT, "' '"),
    ({"name": "t", "partitions": 0, "replication_factor": 1}, Status.INVALID_ARGUMENT, "got 0"),
    ({"name": "t", "partitions": -3, "replication_factor": 1}, Status.INVALID_ARGUMENT, "got -3"),
    ({"name": "t", "partitions": 60_000, "replication_factor": 1}, Status.INVALID_ARGUMENT, "60000"),
    ({"name": "t", "partitions": 1, "replication_factor": 0}, Status.INVALID_ARGUMENT, "got 0"),
    ({"name": "t", "partitions": 1, "replication_factor": 4}, Status.FAILED_PRECONDITION, "Replication factor: 4"),
    ({"name": "t", "partitions": 1, "replication_factor": 1, "start_index": -1}, Status.INVALID_ARGUMENT, "-1"),
    ({"name": "t", "partitions": 1, "replication_factor": 1, "configs": {"nope": "1"}},
     Status.INVALID_ARGUMENT, "'nope'"),
    ({"name": "t", "partitions": 1, "replication_factor": 1, "configs": {"min.insync.replicas": "zero"}},
     Status.INVALID_ARGUMENT, "'zero'"),
    ({"name": "orders", "partitions": 1, "replication_factor": 1}, Status.ALREADY_EXISTS, "'orders'"),
    ({"name": "t", "assignment": (("", 0, (1, 1)),)}, Status.INVALID_ARGUMENT, "Duplicate brokers"),
    ({"name": "t", "assignment": (("", 0, (1, 9)),)}, Status.INVALID_ARGUMENT, "9"),
    ({"name": "t", "assignment": (("", 0, (1,)), ("", 0, (2,)))}, Status.INVALID_ARGUMENT, "Partition 0 is listed twice"),
    ({"name": "t", "assignment": (("", 0, (1,)), ("", 2, (2,)))}, Status.INVALID_ARGUMENT, "missing [1]"),
    ({"name": "t", "assignment": (("", 0, (1, 2)), ("", 1, (2,)))}, Status.INVALID_ARGUMENT, "Inconsistent replication"),
    ({"name": "t", "assignment": (("other", 0, (1,)),)}, Status.INVALID_ARGUMENT, "'other'"),
    ({"name": "t", "assignment": (("", 0, ()),)}, Status.INVALID_ARGUMENT, "replication factor of 0"),
])
def test_create_refusals(make_view, fields, status, fragment):
    refusal = refused(create, make_view(topics=ORDERS), **fields)
    assert refusal.status is status
    assert fragment in refusal.message, refusal.message


@pytest.mark.parametrize("fields, code", [
    ({"name": "bad name", "partitions": 1, "replication_factor": 1}, ErrorCode.INVALID_TOPIC),
    ({"name": "t", "partitions": 0, "replication_factor": 1}, ErrorCode.INVALID_PARTITIONS),
    ({"name": "t", "partitions": 60_000, "replication_factor": 1}, ErrorCode.INVALID_PARTITIONS),
    ({"name": "t", "partitions": 1, "replication_factor": 0}, ErrorCode.INVALID_REPLICATION_FACTOR),
    ({"name": "t", "partitions": 1, "replication_factor": 4}, ErrorCode.INVALID_REPLICATION_FACTOR),
    ({"name": "t", "partitions": 1, "replication_factor": 1, "configs": {"nope": "1"}}, ErrorCode.INVALID_CONFIG),
    ({"name": "orders", "partitions": 1, "replication_factor": 1}, ErrorCode.TOPIC_ALREADY_EXISTS),
    ({"name": "t", "assignment": (("", 0, (1,)), ("", 0, (2,)))}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ({"name": "t", "assignment": (("", 0, (1, 9)),)}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
])
def test_a_create_refusal_names_the_typed_code_of_the_bad_value(make_view, fields, code):
    """The Kafka listener answers per topic with these (INVALID_PARTITIONS, INVALID_CONFIG, ...)."""
    assert refused(create, make_view(topics=ORDERS), **fields).code is code


def test_a_delete_refusal_names_its_typed_code(make_view):
    view = make_view(topics={**ORDERS, "going": {"partitions": {0: [1]}}}, deleting=("going",))
    assert refused(topics.check_delete, view, "absent").code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert refused(topics.check_delete, view, "going").code is ErrorCode.TOPIC_DELETION_IN_PROGRESS
    assert refused(topics.check_delete, view, "bad/name").code is ErrorCode.INVALID_TOPIC


def test_create_refuses_a_dead_known_broker_as_a_precondition(make_view):
    view = make_view(brokers=(1, 2), topics={"old": {"partitions": {0: [3]}}})
    refusal = refused(create, view, name="t", assignment=(("", 0, (1, 3)),))
    assert refusal.status is Status.FAILED_PRECONDITION and "1, 3" in refusal.message


def test_create_refuses_colliding_and_deleting_names(make_view):
    view = make_view(topics={"a.b": {"partitions": {0: [1]}}}, deleting=("gone",))
    assert "'a.b'" in refused(create, view, name="a_b", partitions=1, replication_factor=1).message
    view = make_view(deleting=("gone",))
    assert refused(create, view, name="gone", partitions=1, replication_factor=1).status is Status.FAILED_PRECONDITION


def test_create_refuses_mixed_rack_information_as_a_precondition(make_view):
    view = make_view(racks={1: "a", 2: "b"})
    refusal = refused(create, view, name="t", partitions=3, replication_factor=2)
    assert refusal.status is Status.FAILED_PRECONDITION and "rack" in refusal.message


def test_create_with_fixed_start_index_is_deterministic_and_stores_only_overrides(make_view):
    view = make_view()
    first = create(view, name="t", partitions=3, replication_factor=2, start_index=0, replica_shift=0,
                   configs={"min.insync.replicas": "2"})
    again = create(view, name="t", partitions=3, replication_factor=2, start_index=0, replica_shift=0,
                   configs={"min.insync.replicas": "2"})
    assert first.assignment == again.assignment
    assert first.assignment.partitions == {0: (1, 2), 1: (2, 3), 2: (3, 1)}
    assert dict(first.config.config) == {"min.insync.replicas": "2"}
    assert first.effective_configs["min.insync.replicas"] == "2"
    assert first.effective_configs["unclean.leader.election.enable"] == "false"


# make_view returns a pure builder, so sharing it across examples is safe.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partitions=st.integers(1, 40), replication_factor=st.integers(1, 5), brokers=st.integers(1, 6),
       seed=st.integers(0, 2**32))
def test_accepted_creations_are_well_formed(make_view, partitions, replication_factor, brokers, seed):
    view = make_view(brokers=tuple(range(1, brokers + 1)))
    request = topics.CreateTopic("t", partitions, replication_factor)
    try:
        creation = topics.plan_create_topic(view, request, random.Random(seed))
    except Refusal as refusal:
        assert replication_factor > brokers and refusal.status is Status.FAILED_PRECONDITION
        return
    placed = creation.assignment.partitions
    assert sorted(placed) == list(range(partitions))
    for replicas in placed.values():
        assert len(replicas) == replication_factor == len(set(replicas))
        assert set(replicas) <= set(view.brokers)


def test_add_partitions(make_view):
    view = make_view(topics=ORDERS)
    growth = topics.plan_add_partitions(view, "orders", 4, ())
    assert sorted(growth.added) == [2, 3] and all(len(r) == 2 for r in growth.added.values())
    assert sorted(growth.assignment.partitions) == [0, 1, 2, 3]
    explicit = topics.plan_add_partitions(view, "orders", 3, (("orders", 2, (3, 1)),))
    assert explicit.added == {2: (3, 1)}


@pytest.mark.parametrize("total, explicit, status, fragment", [
    (2, (), Status.INVALID_ARGUMENT, "2 would not be an increase"),
    (1, (), Status.INVALID_ARGUMENT, "1 would not be an increase"),
    (4, (("", 2, (1, 2)),), Status.INVALID_ARGUMENT, "adds 2"),
    (3, (("", 2, (1,)),), Status.INVALID_ARGUMENT, "Inconsistent replication"),
    (3, (("", 2, (1, 7)),), Status.INVALID_ARGUMENT, "7"),
])
def test_add_partitions_refusals(make_view, total, explicit, status, fragment):
    refusal = refused(topics.plan_add_partitions, make_view(topics=ORDERS), "orders", total, explicit)
    assert refusal.status is status and fragment in refusal.message, refusal.message


def test_add_partitions_refused_while_reassigning_or_unknown(make_view):
    view = make_view(topics=ORDERS, reassignment={("orders", 1): (1, 3)})
    refusal = refused(topics.plan_add_partitions, view, "orders", 3, ())
    assert refusal.status is Status.FAILED_PRECONDITION and "partition 1" in refusal.message
    moving = make_view(topics={"orders": {**ORDERS["orders"], "adding": {0: [3]}}})
    assert refused(topics.plan_add_partitions, moving, "orders", 3, ()).status is Status.FAILED_PRECONDITION
    assert refused(topics.plan_add_partitions, make_view(), "nope", 3, ()).status is Status.NOT_FOUND


def test_alter_configs_merges_overrides_and_validates(make_view):
    view = make_view(topics={"t": {"partitions": {0: [1]}, "configs": {"retention.ms": "5", "min.insync.replicas": "2"}}})
    change = topics.plan_alter_configs(view, "t", {"segment.ms": "10"}, ["min.insync.replicas"])
    assert dict(change.config.config) == {"retention.ms": "5", "segment.ms": "10"}
    assert change.effective_configs["min.insync.replicas"] == "1"
    for to_set, to_delete, fragment in [
        ({}, [], "Nothing to change"),
        ({"a.b": "1"}, [], "'a.b'"),
        ({}, ["a.b"], "'a.b'"),
        ({"retention.ms": "x"}, [], "'x'"),
        ({"retention.ms": "1"}, ["retention.ms"], "both set and deleted"),
    ]:
        refusal = refused(topics.plan_alter_configs, view, "t", to_set, to_delete)
        assert refusal.status is Status.INVALID_ARGUMENT and fragment in refusal.message, refusal.message
    # Deleting a known key that is not set is allowed (idempotent scripts), flush.* included.
    topics.plan_alter_configs(view, "t", {}, ["flush.ms"])


def test_delete_checks(make_view):
    view = make_view(topics=ORDERS, deleting=("orders",))
    assert refused(topics.check_delete, view, "orders").status is Status.FAILED_PRECONDITION
    assert refused(topics.check_delete, view, "nope").status is Status.NOT_FOUND
    assert refused(topics.check_delete, view, "a/b").status is Status.INVALID_ARGUMENT


def test_describe_filters_and_leaves_out_topics_without_matches(make_view):
    view = make_view(brokers=(1, 2), topics={
        "healthy": {"partitions": {0: [1, 2]}, "states": {0: (1, [1, 2])}},
        "sick": {"partitions": {0: [1, 3], 1: [2, 1]}, "states": {0: (3, [3]), 1: (2, [2, 1])},
                 "configs": {"min.insync.replicas": "2"}},
    })
    everything = topics.describe_topics(view, [], Filter.NONE)
    assert [t.name for t in everything] == ["healthy", "sick"]
    unavailable = topics.describe_topics(view, [], Filter.UNAVAILABLE)
    assert [(t.name, [p.partition for p in t.partitions]) for t in unavailable] == [("sick", [0])]
    at_min = topics.describe_topics(view, [], Filter.AT_MIN_ISR)
    assert [(t.name, [p.partition for p in t.partitions]) for t in at_min] == [("sick", [1])]
    assert unavailable[0].partitions[0].health.offline_replicas == (3,)
    assert refused(topics.describe_topics, view, ["healthy", "nope", "gone"], Filter.NONE).message == \
        "Unknown topics: 'gone', 'nope'."


def test_describe_judges_a_topic_without_its_own_min_isr_by_its_leaders_broker_default(make_view):
    view = make_view(brokers=(1, 2, 3), min_isr={1: 2, 2: 2, 3: 3}, topics={
        "plain": {"partitions": {0: [1, 2, 3], 1: [3, 1, 2], 2: [2, 3, 1]},
                  "states": {0: (1, [1, 2]), 1: (3, [3, 1]), 2: (-1, [2])}},
        "own": {"partitions": {0: [3, 1, 2]}, "states": {0: (3, [3])}, "configs": {"min.insync.replicas": "1"}},
    })
    own, plain = topics.describe_topics(view, [], Filter.NONE)
    shown = [(p.min_insync_replicas, p.health.under_min_isr, p.health.at_min_isr) for p in plain.partitions]
    assert shown == [(2, False, True), (3, True, False), (2, True, False)]  # no leader: the lowest live default
    assert [(p.min_insync_replicas, p.health.under_min_isr) for p in own.partitions] == [(1, False)]
