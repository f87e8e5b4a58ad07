"""apply(): the next state from a plan, copy on write, indexes kept exact."""

import random

import pytest
from controller_story import cluster, tp

from replog.controller.core import apply, decide
from replog.controller.core.events import BrokersChanged, ReassignmentRequested, TopicsCreated
from replog.controller.core.invariants import violations
from replog.controller.core.model import LeaderAndIsr
from replog.controller.core.plan import Plan, SetPartitionState
from replog.controller.core.steps import Answer, Apply, Write


def test_an_empty_plan_gives_back_the_same_state():
    state = cluster(topics={"orders": [(1, 2)]})
    assert apply(state, Plan()) is state


def test_the_old_state_is_untouched_and_unchanged_parts_are_shared():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    snapshot = repr(state)
    plan = decide(state, BrokersChanged({b: i for b, i in state.live_brokers.items() if b != 3}), random.Random(0))
    after = apply(state, plan)
    assert repr(state) == snapshot
    assert after.assignments is state.assignments and after.partitions_by_broker is state.partitions_by_broker
    assert after.partition_states is not state.partition_states


def test_indexes_follow_new_topics_and_moved_replicas():
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(1, 2)]})
    state = apply(state, decide(state, TopicsCreated({"audit": {0: (3, 4), 1: (4, 1)}}), random.Random(0)))
    assert state.partitions_by_topic == {"orders": (0,), "audit": (0, 1)}
    state = apply(state, decide(state, ReassignmentRequested({tp("orders", 0): (2, 3)}), random.Random(0)))
    assert tp("orders", 0) in state.partitions_by_broker[3]
    assert violations(state) == []


def test_a_write_against_another_partition_epoch_is_a_broken_invariant():
    state = cluster(topics={"orders": [(1, 2)]})
    stale = SetPartitionState(tp("orders", 0), LeaderAndIsr(2, 1, (2,), 7, 6), 5)
    with pytest.raises(AssertionError, match="expected partition epoch 5"):
        apply(state, Plan(steps=(Write((stale,)), Apply(), Answer())))
