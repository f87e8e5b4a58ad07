"""Partition and replica state machines: the tables, and a bad move raising at once."""

import pytest

from replog.controller.core.errors import IllegalStateTransition
from replog.controller.core.states import (
    PARTITION_TRANSITIONS,
    REPLICA_TRANSITIONS,
    PartitionState,
    ReplicaState,
    check_partition_transition,
    check_replica_transition,
    derive_partition_state,
    derive_replica_state,
)


def test_every_state_has_a_row():
    assert set(PARTITION_TRANSITIONS) == set(PartitionState)
    assert set(REPLICA_TRANSITIONS) == set(ReplicaState)


@pytest.mark.parametrize("current, target", [
    (PartitionState.NON_EXISTENT, PartitionState.NEW),
    (PartitionState.NEW, PartitionState.ONLINE),
    (PartitionState.ONLINE, PartitionState.OFFLINE),
    (PartitionState.OFFLINE, PartitionState.ONLINE),
    (PartitionState.OFFLINE, PartitionState.NON_EXISTENT),
])
def test_legal_partition_moves(current, target):
    check_partition_transition("t-0", current, target)


@pytest.mark.parametrize("current, target", [
    (PartitionState.NON_EXISTENT, PartitionState.ONLINE),
    (PartitionState.ONLINE, PartitionState.NEW),
    (PartitionState.ONLINE, PartitionState.NON_EXISTENT),
])
def test_illegal_partition_moves_raise(current, target):
    with pytest.raises(IllegalStateTransition, match=f"t-0: illegal transition {current.value} -> {target.value}"):
        check_partition_transition("t-0", current, target)


def test_replica_deletion_must_pass_through_offline():
    check_replica_transition("t-0", 1, ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED)
    with pytest.raises(IllegalStateTransition):
        check_replica_transition("t-0", 1, ReplicaState.ONLINE, ReplicaState.DELETION_STARTED)
    with pytest.raises(IllegalStateTransition):
        check_replica_transition("t-0", 1, ReplicaState.DELETION_STARTED, ReplicaState.ONLINE)


def test_an_illegal_transition_is_an_assertion_failure_not_a_peer_error():
    assert issubclass(IllegalStateTransition, AssertionError)


def test_states_are_derived_from_the_controller_state():
    assert derive_partition_state(False, False, None) is PartitionState.NON_EXISTENT
    assert derive_partition_state(True, False, None) is PartitionState.NEW
    assert derive_partition_state(True, False, 3) is PartitionState.ONLINE
    assert derive_partition_state(True, False, -1) is PartitionState.OFFLINE
    assert derive_partition_state(True, True, 3) is PartitionState.OFFLINE
    assert derive_replica_state(True, True, None) is ReplicaState.ONLINE
    assert derive_replica_state(True, False, None) is ReplicaState.OFFLINE
    assert derive_replica_state(True, True, True) is ReplicaState.DELETION_STARTED
    assert derive_replica_state(False, True, None) is ReplicaState.NON_EXISTENT
