"""Reassignment plans: validation, merging into the pending request, cancel, progress, generate."""

from __future__ import annotations

import random

import pytest

from replog.common.topic_admin.core.refusal import Refusal, Status
from replog.gateway.core import reassignments as core

TOPICS = {
    "t": {"partitions": {0: [1, 2], 1: [2, 3], 2: [3, 1]}, "states": {0: (1, [1, 2]), 1: (2, [2, 3])}},
    "u": {"partitions": {0: [4]}},   # broker 4 is known only from this assignment (not registered)
}


def refused(call, *args) -> Refusal:
    with pytest.raises(Refusal) as caught:
        call(*args)
    return caught.value


@pytest.mark.parametrize("plan, fragment", [
    ((), "names no partitions"),
    ((("t", 0, (2, 3)), ("t", 0, (3, 1))), "t-0 is listed twice"),
    ((("t", 0, (2, 2)),), "Broker 2 is listed twice"),
    ((("t", 0, (2, 9)),), "Unknown broker 9"),
    ((("t", 7, (2, 3)),), "t-7"),
    ((("nope", 0, (2, 3)),), "nope-0"),
    ((("t", 0, ()),), "empty replica list"),
])
def test_invalid_plans_are_refused_naming_the_value(make_view, plan, fragment):
    refusal = refused(core.plan_execute, make_view(topics=TOPICS), plan, 0)
    assert refusal.status is Status.INVALID_ARGUMENT and fragment in refusal.message, refusal.message


def test_negative_throttle_and_deleting_topics_are_refused(make_view):
    assert "-5" in refused(core.plan_execute, make_view(topics=TOPICS), (("t", 0, (2, 3)),), -5).message
    view = make_view(topics=TOPICS, deleting=("t",))
    assert refused(core.plan_execute, view, (("t", 0, (2, 3)),), 0).status is Status.FAILED_PRECONDITION


def test_execute_merges_into_the_pending_request_and_allows_rf_change_and_known_dead_brokers(make_view):
    view = make_view(topics=TOPICS, reassignment={("t", 1): (1, 2), ("t", 2): (1, 2)})
    execution = core.plan_execute(view, (("t", 0, (2, 3, 4)), ("t", 2, (2, 1))), 1000)
    assert dict(execution.request.targets) == {("t", 0): (2, 3, 4), ("t", 1): (1, 2), ("t", 2): (2, 1)}
    assert execution.current == {("t", 0): (1, 2), ("t", 2): (3, 1)}
    assert execution.throttle.bytes_per_s == 1000
    assert core.plan_execute(view, (("t", 0, (2, 3)),), 0).throttle is None


def test_current_is_the_original_replicas_while_a_reassignment_runs(make_view):
    view = make_view(topics={"t": {"partitions": {0: [3, 1, 2]}, "adding": {0: [3]}, "removing": {0: [2]}}})
    assert core.plan_execute(view, (("t", 0, (1, 2)),), 0).current == {("t", 0): (1, 2)}


def test_in_progress_comes_from_the_request_and_from_adding_removing(make_view):
    view = make_view(
        topics={"t": {"partitions": {0: [3, 1, 2], 1: [1, 2], 2: [2, 3]}, "adding": {0: [3]}, "removing": {0: [2]}}},
        reassignment={("t", 1): (2, 3), ("t", 9): (1,), ("gone", 0): (1,)},
    )
    assert core.in_progress(view) == {("t", 0): (3, 1), ("t", 1): (2, 3)}


def test_progress_statuses(make_view):
    view = make_view(topics=TOPICS, reassignment={("t", 1): (1, 3)})
    rows = {(p.topic, p.partition): p for p in core.progress(view, {
        ("t", 0): (1, 2),      # already equal, nothing running: complete
        ("t", 1): (1, 3),      # requested: in progress, broker 1 must catch up
        ("t", 2): (1, 2),      # different and not running: failed
    })}
    assert rows[("t", 0)].status is core.Status.COMPLETE
    assert rows[("t", 1)].status is core.Status.IN_PROGRESS
    assert rows[("t", 1)].catching_up == (1,) and rows[("t", 1)].leader == 2
    assert rows[("t", 2)].status is core.Status.FAILED


def test_cancel(make_view):
    view = make_view(topics=TOPICS, reassignment={("t", 1): (1, 3)})
    cancellation = core.plan_cancel(view, [])
    assert cancellation.cancelled == (("t", 1),)
    assert dict(cancellation.request.targets) == {("t", 1): ()}
    assert core.plan_cancel(view, [("t", 1), ("t", 1)]).cancelled == (("t", 1),)
    refusal = refused(core.plan_cancel, view, [("t", 0)])
    assert refusal.status is Status.FAILED_PRECONDITION and "t-0" in refusal.message
    assert refused(core.plan_cancel, view, [("t", 5)]).status is Status.INVALID_ARGUMENT
    assert refused(core.plan_cancel, make_view(topics=TOPICS), []).status is Status.FAILED_PRECONDITION


def test_generate_places_topics_on_the_given_brokers(make_view):
    view = make_view(brokers=(1, 2, 3, 4), topics=TOPICS)
    current, proposed = core.generate(view, ["t"], [2, 3, 4], random.Random(1))
    assert current == {("t", 0): (1, 2), ("t", 1): (2, 3), ("t", 2): (3, 1)}
    assert sorted(proposed) == sorted(current)
    assert all(len(r) == 2 and set(r) <= {2, 3, 4} and len(set(r)) == 2 for r in proposed.values())


@pytest.mark.parametrize("topics, brokers, status, fragment", [
    ([], [1], Status.INVALID_ARGUMENT, "at least one topic"),
    (["t"], [], Status.INVALID_ARGUMENT, "at least one target broker"),
    (["t"], [1, 1], Status.INVALID_ARGUMENT, "Broker 1 is listed twice"),
    (["t"], [1, 8], Status.INVALID_ARGUMENT, "Unknown broker 8"),
    (["t"], [1], Status.INVALID_ARGUMENT, "replication factor 2"),
    (["nope"], [1, 2], Status.NOT_FOUND, "'nope'"),
])
def test_generate_refusals(make_view, topics, brokers, status, fragment):
    refusal = refused(core.generate, make_view(topics=TOPICS), topics, brokers, random.Random(1))
    assert refusal.status is status and fragment in refusal.message, refusal.message
