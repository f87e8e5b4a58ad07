"""The group state machine: joins, syncs, heartbeats, sessions, generations and commit fencing."""

import pytest

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.groups.core.answers import JoinAnswer, SyncAnswer
from replog.broker.groups.core.group import Group
from replog.broker.groups.core.model import (
    NO_GENERATION,
    GroupPolicy,
    GroupState,
    JoinRequest,
    Protocol,
    check_transition,
)
from replog.common.core.partitions import TopicPartition

POLICY = GroupPolicy(session_timeout_ms_min=1_000, session_timeout_ms_max=60_000, initial_rebalance_delay_ms=3_000)
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def request(member_id="", protocols=("range",), protocol_type="consumer", session_ms=SESSION_MS):
    return JoinRequest(member_id, "app", "10.0.0.1", session_ms, REBALANCE_MS, protocol_type,
                       tuple(Protocol(name, ("orders",)) for name in protocols))


def joins(outcome):
    return {a.member_id: a for a in outcome.answers if isinstance(a, JoinAnswer)}


def syncs(outcome):
    return {a.member_id: a for a in outcome.answers if isinstance(a, SyncAnswer)}


def form(group, names, now_ms=0):
    """Three members start together; the initial delay passes; the join phase completes."""
    for name in names:
        assert group.join(request(), name, now_ms).answers == []  # parked: the initial delay runs
    answers = joins(group.tick(now_ms + POLICY.initial_rebalance_delay_ms))
    assert set(answers) == set(names)
    return answers


def stabilise(group, answers, now_ms):
    leader = next(a for a in answers.values() if a.members)
    plan = {m: ((TopicPartition("orders", i),), b"") for i, m in enumerate(sorted(answers))}
    for member_id in answers:
        if member_id != leader.member_id:
            assert group.sync(member_id, leader.generation_id, {}, now_ms).answers == []
    outcome = group.sync(leader.member_id, leader.generation_id, plan, now_ms)
    assert outcome.persist is not None and outcome.answers == []  # nothing answered before it is stored
    assert group.state is GroupState.COMPLETING_REBALANCE
    done = group.assignment_persisted(leader.generation_id, None, now_ms)
    assert group.state is GroupState.STABLE
    return syncs(done)


def test_members_started_together_form_one_generation_and_each_gets_its_own_partitions():
    group = Group("billing", POLICY)
    answers = form(group, ["a", "b", "c"])
    assert {a.generation_id for a in answers.values()} == {1}
    leaders = [a for a in answers.values() if a.members]
    assert len(leaders) == 1 and {m for m, _ in leaders[0].members} == {"a", "b", "c"}
    assert {a.leader_member_id for a in answers.values()} == {leaders[0].member_id}
    assigned = stabilise(group, answers, 3_000)
    assert {m: a.assignment for m, a in assigned.items()} == {
        "a": (TopicPartition("orders", 0),), "b": (TopicPartition("orders", 1),), "c": (TopicPartition("orders", 2),)}


def test_a_dead_member_is_removed_after_its_session_and_the_others_rebalance_to_a_new_generation():
    group = Group("billing", POLICY)
    stabilise(group, form(group, ["a", "b", "c"]), 3_000)
    for now_ms in range(4_000, 13_001, 3_000):
        assert group.heartbeat("a", 1, now_ms) is None
        assert group.heartbeat("b", 1, now_ms) is None
    assert joins(group.tick(13_001)) == {}  # c last heard at 3_000: its session (10 s) is over
    assert "c" not in group.members and group.state is GroupState.PREPARING_REBALANCE
    assert group.heartbeat("a", 1, 13_100).code is ErrorCode.REBALANCE_IN_PROGRESS
    assert group.join(request("a"), "unused", 13_200).answers == []
    answers = joins(group.join(request("b"), "unused", 13_300))
    assert set(answers) == {"a", "b"} and answers["a"].generation_id == 2


def test_a_member_that_does_not_rejoin_by_the_rebalance_deadline_is_dropped():
    group = Group("billing", POLICY)
    stabilise(group, form(group, ["a", "b"]), 3_000)
    group.join(request("a"), "unused", 5_000)
    for now_ms in range(6_000, 5_000 + REBALANCE_MS, 2_000):
        group.heartbeat("b", 1, now_ms)  # alive, but never rejoins
        assert joins(group.tick(now_ms)) == {}
    answers = joins(group.tick(5_000 + REBALANCE_MS))
    assert set(answers) == {"a"} and set(group.members) == {"a"}


def test_commits_are_fenced_by_generation_and_membership():
    group = Group("billing", POLICY)
    stabilise(group, form(group, ["a", "b"]), 3_000)
    assert group.commit_refusal("a", 1, 4_000) is None
    assert group.commit_refusal("a", 0, 4_000).code is ErrorCode.ILLEGAL_GENERATION
    assert group.commit_refusal("zombie", 1, 4_000).code is ErrorCode.UNKNOWN_MEMBER_ID
    assert group.commit_refusal("", NO_GENERATION, 4_000).code is ErrorCode.ILLEGAL_GENERATION
    group.join(request("a"), "unused", 5_000)
    # during the join phase the current generation may still commit what it processed
    assert group.commit_refusal("b", 1, 5_100) is None
    joins(group.join(request("b"), "unused", 5_200))
    assert group.commit_refusal("b", 1, 5_300).code is ErrorCode.ILLEGAL_GENERATION
    assert group.commit_refusal("b", 2, 5_300).code is ErrorCode.REBALANCE_IN_PROGRESS


def test_an_empty_group_takes_commits_outside_any_generation_and_offset_resets():
    group = Group("billing", POLICY)
    assert group.commit_refusal("", NO_GENERATION, 0) is None
    assert group.alter_offsets_refusal() is None
    group.join(request(), "a", 0)
    assert group.alter_offsets_refusal().code is ErrorCode.NON_EMPTY_GROUP
    assert group.delete().code is ErrorCode.NON_EMPTY_GROUP


def test_the_last_member_leaving_empties_the_group_at_a_new_generation_that_is_persisted():
    group = Group("billing", POLICY)
    stabilise(group, form(group, ["a"]), 3_000)
    outcome = group.leave("a", 4_000)
    assert group.state is GroupState.EMPTY and group.generation_id == 2
    assert outcome.persist is not None and outcome.persist.members == ()
    assert group.leave("a", 4_001).refusal.code is ErrorCode.UNKNOWN_MEMBER_ID
    assert group.delete() is None and group.state is GroupState.DEAD
    assert group.join(request(), "b", 5_000).refusal.code is ErrorCode.NOT_COORDINATOR


def test_a_leave_during_the_join_phase_answers_the_leavers_parked_join():
    group = Group("billing", POLICY)
    group.join(request(), "a", 0)
    group.join(request(), "b", 0)
    outcome = group.leave("a", 100)
    assert joins(outcome)["a"].error is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_join_during_the_sync_phase_restarts_the_rebalance_and_answers_parked_syncs():
    group = Group("billing", POLICY)
    answers = form(group, ["a", "b"])
    follower = next(m for m, a in answers.items() if not a.members)
    group.sync(follower, 1, {}, 3_100)
    outcome = group.join(request(), "c", 3_200)
    assert syncs(outcome)[follower].error is ErrorCode.REBALANCE_IN_PROGRESS
    assert group.state is GroupState.PREPARING_REBALANCE


def test_a_failed_persist_answers_the_syncs_with_the_error_and_rebalances():
    group = Group("billing", POLICY)
    answers = form(group, ["a", "b"])
    leader = next(m for m, a in answers.items() if a.members)
    group.sync(leader, 1, {leader: ((TopicPartition("orders", 0),), b"")}, 3_100)
    outcome = group.assignment_persisted(1, Refusal(ErrorCode.NOT_COORDINATOR, "moved"), 3_200)
    assert syncs(outcome)[leader].error is ErrorCode.NOT_COORDINATOR
    assert group.state is GroupState.PREPARING_REBALANCE and group.members[leader].assignment == ()


@pytest.mark.parametrize("req, code", [
    (request(member_id="ghost"), ErrorCode.UNKNOWN_MEMBER_ID),
    (request(session_ms=500), ErrorCode.INVALID_SESSION_TIMEOUT),
    (request(session_ms=120_000), ErrorCode.INVALID_SESSION_TIMEOUT),
    (request(protocols=("roundrobin",)), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    (request(protocol_type="connect"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
])
def test_bad_joins_are_refused_with_a_typed_code(req, code):
    group = Group("billing", POLICY)
    group.join(request(), "a", 0)
    outcome = group.join(req, "new", 0)
    assert outcome.refusal.code is code and outcome.refusal.reason


def test_the_assignor_most_members_prefer_among_those_all_support_is_chosen():
    group = Group("billing", POLICY)
    group.join(request(protocols=("cooperative-sticky", "range")), "a", 0)
    group.join(request(protocols=("range", "cooperative-sticky")), "b", 0)
    group.join(request(protocols=("cooperative-sticky", "range")), "c", 0)
    answers = joins(group.tick(3_000))
    assert {a.protocol_name for a in answers.values()} == {"cooperative-sticky"}


def test_the_group_size_limit_refuses_a_new_member():
    group = Group("billing", GroupPolicy(members_max=2))
    group.join(request(), "a", 0)
    group.join(request(), "b", 0)
    assert group.join(request(), "c", 0).refusal.code is ErrorCode.GROUP_MAX_SIZE_REACHED


def test_losing_the_offsets_partition_tells_every_parked_call_to_find_the_coordinator():
    group = Group("billing", POLICY)
    group.join(request(), "a", 0)
    outcome = group.unload()
    assert joins(outcome)["a"].error is ErrorCode.NOT_COORDINATOR and group.state is GroupState.DEAD


def test_illegal_transitions_are_bugs():
    with pytest.raises(AssertionError):
        check_transition(GroupState.EMPTY, GroupState.STABLE)
    check_transition(GroupState.STABLE, GroupState.PREPARING_REBALANCE)
