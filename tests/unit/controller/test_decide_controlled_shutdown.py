"""Stories: a broker asks to stop (controlled shutdown)."""

from controller_story import brokers, cluster, run, sent_partitions, stops, tp, writes

from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import (
    AlterPartitionItem,
    AlterPartitionReceived,
    BrokersChanged,
    ControlledShutdownRequested,
)
from replog.controller.core.model import LeaderAndIsr


def shut_down(state, broker_id, broker_epoch=None):
    return run(state, ControlledShutdownRequested(broker_id, 100 + broker_id if broker_epoch is None else broker_epoch))


def test_leadership_moves_to_the_next_isr_member_and_the_stopping_broker_leaves_the_isr():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, after = shut_down(state, 1)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 1, (2, 3), 7, 1)
    assert plan.reply.error is ErrorCode.NONE and plan.reply.remaining == ()
    assert tp("orders", 0) in sent_partitions(plan, 1)  # it becomes a follower: clients get NOT_LEADER
    assert after.shutting_down_brokers == {1}


def test_a_follower_leaves_the_isr_and_is_stopped_without_deleting():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, _ = shut_down(state, 3)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(1, 0, (1, 2), 7, 1)
    assert stops(plan) == {3: {tp("orders", 0): False}}
    assert tp("orders", 0) not in sent_partitions(plan, 3)  # never start and stop a replica at once
    assert sent_partitions(plan, 1) == {tp("orders", 0)}


def test_partitions_nobody_else_can_lead_are_reported_as_remaining():
    state = cluster(topics={"orders": [(1, 2, 3)], "single": [(1,)]}, states={("orders", 0): (1, (1,))})
    plan, _ = shut_down(state, 1)
    assert plan.reply.remaining == (tp("orders", 0),)  # one replica: nothing to wait for
    assert not writes(plan)


def test_a_stopping_broker_is_never_elected_nor_added_back():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    _, state = shut_down(state, 2)
    plan, state = run(state, BrokersChanged(brokers(2, 3)))
    assert writes(plan)[tp("orders", 0)].leader == 3
    item = AlterPartitionItem(tp("orders", 0), 1, (3, 2), 2, (103, 102))
    plan, _ = run(state, AlterPartitionReceived(3, 103, (item,)))
    assert plan.reply.results[0].error is ErrorCode.INELIGIBLE_REPLICA


def test_asking_again_changes_nothing_more():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    _, state = shut_down(state, 1)
    plan, _ = shut_down(state, 1)
    assert not plan.zk_writes and plan.reply.remaining == ()


def test_unknown_or_stale_brokers_are_refused():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, _ = shut_down(state, 9)
    assert plan.reply.error is ErrorCode.BROKER_NOT_AVAILABLE
    for broker_epoch in (55, 0):  # 0, "not given", would let any caller drain any broker
        plan, after = shut_down(state, 1, broker_epoch=broker_epoch)
        assert plan.reply.error is ErrorCode.STALE_BROKER_EPOCH and after.shutting_down_brokers == frozenset()

