"""Role transitions as a table, and LeaderAndIsr / StopReplica decisions."""

import pytest

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import LEADER_EPOCH_JUMP_MAX
from replog.broker.core.partition import (
    VALID_PREVIOUS_ROLES,
    Applied,
    AssignLeaderEpochStart,
    ChangeKind,
    CompleteDelayedOperations,
    DeleteLog,
    IllegalReplicaTransition,
    LeaderAndIsrDecision,
    PartitionState,
    ReplicaRole,
    StartFetcher,
    StopFetcher,
    Unchanged,
    apply_leader_and_isr,
    apply_stop_replica,
    check_transition,
)
from replog.common.core.partitions import TopicPartition

TP = TopicPartition("orders", 0)
ME = 1


def decision(leader=1, leader_epoch=0, isr=(1, 2, 3), partition_epoch=0, replicas=(1, 2, 3)):
    return LeaderAndIsrDecision(TP, leader, leader_epoch, tuple(isr), partition_epoch, tuple(replicas))


def applied(state, d) -> Applied:
    outcome = apply_leader_and_isr(state, d)
    assert isinstance(outcome, Applied), outcome
    return outcome


def new_state() -> PartitionState:
    return PartitionState.new(TP, ME)


# --- the table -------------------------------------------------------------------


def test_table_lists_every_role():
    assert set(VALID_PREVIOUS_ROLES) == set(ReplicaRole)


@pytest.mark.parametrize("target", list(ReplicaRole))
def test_nothing_leaves_stopped(target):
    with pytest.raises(IllegalReplicaTransition):
        check_transition(ReplicaRole.STOPPED, target)


@pytest.mark.parametrize("previous", list(ReplicaRole))
def test_nothing_returns_to_new(previous):
    with pytest.raises(IllegalReplicaTransition):
        check_transition(previous, ReplicaRole.NEW)


@pytest.mark.parametrize("previous", [ReplicaRole.NEW, ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.OFFLINE])
@pytest.mark.parametrize("target", [ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.OFFLINE, ReplicaRole.STOPPED])
def test_live_roles_move_freely(previous, target):
    check_transition(previous, target)


def test_a_decision_for_a_stopped_replica_raises_at_once():
    stopped = apply_stop_replica(applied(new_state(), decision()).state, leader_epoch=0, delete=False).state
    with pytest.raises(IllegalReplicaTransition):
        apply_leader_and_isr(stopped, decision(leader_epoch=1))


# --- LeaderAndIsr ------------------------------------------------------------------


def test_become_leader_assigns_the_epoch_start():
    outcome = applied(new_state(), decision(leader=ME, leader_epoch=4))
    assert outcome.change is ChangeKind.BECOME_LEADER
    assert outcome.state.role is ReplicaRole.LEADER and outcome.state.leader_epoch == 4
    assert outcome.effects == (AssignLeaderEpochStart(4), CompleteDelayedOperations())


def test_become_follower_starts_fetching_from_the_leader():
    outcome = applied(new_state(), decision(leader=2, leader_epoch=4))
    assert outcome.change is ChangeKind.BECOME_FOLLOWER
    assert outcome.effects == (StartFetcher(2, 4), CompleteDelayedOperations())


def test_follower_of_a_new_leader_stops_the_old_fetcher_first():
    follower = applied(new_state(), decision(leader=2, leader_epoch=4)).state
    outcome = applied(follower, decision(leader=3, leader_epoch=5))
    assert outcome.effects == (StopFetcher(), StartFetcher(3, 5), CompleteDelayedOperations())


def test_follower_becoming_leader_stops_fetching():
    follower = applied(new_state(), decision(leader=2, leader_epoch=4)).state
    outcome = applied(follower, decision(leader=ME, leader_epoch=5))
    assert outcome.effects == (StopFetcher(), AssignLeaderEpochStart(5), CompleteDelayedOperations())


def test_no_leader_means_offline():
    outcome = applied(new_state(), decision(leader=-1, leader_epoch=2, isr=(2,)))
    assert outcome.change is ChangeKind.GO_OFFLINE and outcome.state.role is ReplicaRole.OFFLINE
    assert outcome.effects == (CompleteDelayedOperations(),)


def test_lower_leader_epoch_is_fenced():
    leader = applied(new_state(), decision(leader=ME, leader_epoch=5)).state
    outcome = apply_leader_and_isr(leader, decision(leader=2, leader_epoch=4))
    assert isinstance(outcome, Refusal) and outcome.code is ErrorCode.FENCED_LEADER_EPOCH


def test_redelivered_decision_is_unchanged():
    leader = applied(new_state(), decision(leader=ME, leader_epoch=5, partition_epoch=7)).state
    outcome = apply_leader_and_isr(leader, decision(leader=ME, leader_epoch=5, partition_epoch=7))
    assert isinstance(outcome, Unchanged) and outcome.state == leader


def test_isr_only_update_keeps_the_role():
    leader = applied(new_state(), decision(leader=ME, leader_epoch=5, partition_epoch=7)).state
    outcome = applied(leader, decision(leader=ME, leader_epoch=5, isr=(1, 2), partition_epoch=8))
    assert outcome.change is ChangeKind.ISR_UPDATE
    assert outcome.state.isr == (1, 2) and outcome.state.partition_epoch == 8
    assert outcome.state.role is ReplicaRole.LEADER


def test_older_partition_epoch_at_same_leader_epoch_is_refused():
    leader = applied(new_state(), decision(leader=ME, leader_epoch=5, partition_epoch=7)).state
    outcome = apply_leader_and_isr(leader, decision(leader=ME, leader_epoch=5, partition_epoch=6))
    assert isinstance(outcome, Refusal) and outcome.code is ErrorCode.INVALID_UPDATE_VERSION


def test_leader_change_without_new_epoch_is_refused():
    follower = applied(new_state(), decision(leader=2, leader_epoch=5, partition_epoch=1)).state
    outcome = apply_leader_and_isr(follower, decision(leader=3, leader_epoch=5, partition_epoch=2))
    assert isinstance(outcome, Refusal) and outcome.code is ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    "bad, code",
    [
        (decision(replicas=(2, 3), isr=(2, 3), leader=2), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (decision(isr=(1, 4)), ErrorCode.INVALID_REQUEST),
        (decision(leader=2, isr=(1, 3)), ErrorCode.INVALID_REQUEST),
        (decision(leader_epoch=-3), ErrorCode.INVALID_REQUEST),
    ],
)
def test_malformed_decisions_are_refused(bad, code):
    outcome = apply_leader_and_isr(new_state(), bad)
    assert isinstance(outcome, Refusal) and outcome.code is code


# --- StopReplica ---------------------------------------------------------------------


def test_stop_follower_stops_fetcher_and_may_delete():
    follower = applied(new_state(), decision(leader=2, leader_epoch=3)).state
    outcome = apply_stop_replica(follower, leader_epoch=3, delete=True)
    assert isinstance(outcome, Applied) and outcome.state.role is ReplicaRole.STOPPED
    assert outcome.effects == (StopFetcher(), CompleteDelayedOperations(), DeleteLog())


def test_stop_with_older_epoch_is_fenced_and_the_current_or_a_newer_one_is_not():
    leader = applied(new_state(), decision(leader=ME, leader_epoch=3)).state
    fenced = apply_stop_replica(leader, leader_epoch=2, delete=False)
    assert isinstance(fenced, Refusal) and fenced.code is ErrorCode.FENCED_LEADER_EPOCH
    assert isinstance(apply_stop_replica(leader, leader_epoch=3, delete=True), Applied)
    assert isinstance(apply_stop_replica(leader, leader_epoch=4, delete=True), Applied)


@pytest.mark.parametrize("leader_epoch", [-1, -2, -(1 << 31)])
def test_a_stop_at_any_epoch_is_refused_even_for_a_new_replica(leader_epoch):
    for state in (new_state(), applied(new_state(), decision(leader=2, leader_epoch=3)).state):
        refused = apply_stop_replica(state, leader_epoch=leader_epoch, delete=True)
        assert isinstance(refused, Refusal) and refused.code is ErrorCode.INVALID_REQUEST
        assert "must name the partition's current leader epoch" in refused.reason


def test_a_stop_beyond_the_jump_bound_is_refused():
    follower = applied(new_state(), decision(leader=2, leader_epoch=3)).state
    assert isinstance(apply_stop_replica(follower, leader_epoch=3 + LEADER_EPOCH_JUMP_MAX, delete=True), Applied)
    refused = apply_stop_replica(follower, leader_epoch=4 + LEADER_EPOCH_JUMP_MAX, delete=True)
    assert isinstance(refused, Refusal) and refused.code is ErrorCode.INVALID_REQUEST


def test_a_leader_epoch_beyond_the_jump_bound_is_refused_and_one_within_it_applies():
    follower = applied(new_state(), decision(leader=2, leader_epoch=3)).state
    for wild in (4 + LEADER_EPOCH_JUMP_MAX, (1 << 31) - 1):
        refused = apply_leader_and_isr(follower, decision(leader=ME, leader_epoch=wild, partition_epoch=1))
        assert isinstance(refused, Refusal) and refused.code is ErrorCode.INVALID_REQUEST
        assert f"more than {LEADER_EPOCH_JUMP_MAX} past the held 3" in refused.reason
    within = apply_leader_and_isr(follower, decision(leader=ME, leader_epoch=3 + LEADER_EPOCH_JUMP_MAX))
    assert isinstance(within, Applied) and within.state.leader_epoch == 3 + LEADER_EPOCH_JUMP_MAX


def test_a_new_replica_has_no_epoch_to_measure_a_jump_from():
    assert isinstance(apply_leader_and_isr(new_state(), decision(leader=2, leader_epoch=1 << 20)), Applied)


def test_stopping_twice_is_unchanged():
    stopped = apply_stop_replica(new_state(), leader_epoch=0, delete=False).state
    assert isinstance(apply_stop_replica(stopped, leader_epoch=0, delete=False), Unchanged)
