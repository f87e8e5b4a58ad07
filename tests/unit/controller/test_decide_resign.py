"""Stories: a running broker gives up leadership of partitions its scrubber found damaged (issue 40)."""

from controller_story import cluster, leader_and_isr, run, sent_partitions, stops, tp, writes

from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import ControlledShutdownRequested
from replog.controller.core.model import LeaderAndIsr
from replog.controller.core.steps import NEW_LEADERS, Answer, Await


def resign(state, broker_id, *partitions, broker_epoch=None):
    event = ControlledShutdownRequested(broker_id, 100 + broker_id if broker_epoch is None else broker_epoch,
                                        partitions)
    return run(state, event)


def test_a_named_partition_moves_to_another_isr_member_and_the_broker_leaves_its_isr():
    state = cluster(topics={"orders": [(1, 2, 3), (1, 2, 3)]})
    plan, after = resign(state, 1, tp("orders", 0))
    assert writes(plan) == {tp("orders", 0): LeaderAndIsr(2, 1, (2, 3), 7, 1)}  # orders-1 not named: kept
    assert plan.reply.error is ErrorCode.NONE and plan.reply.remaining == ()
    assert after.shutting_down_brokers == frozenset()  # it keeps running, eligible for any election
    assert not stops(plan)  # it keeps the replica ...
    (request,) = [d for d in leader_and_isr(plan)[1].partitions if d.partition == tp("orders", 0)]
    assert request.state.leader == 2  # ... and follows the new leader, to fetch and rejoin the ISR
    assert plan.metrics.leader_elections == 1 and plan.metrics.isr_shrinks == 1


def test_the_answer_waits_for_the_new_leader():
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(1, 2, 3), (4, 1, 3)]})
    plan, _ = resign(state, 1, tp("orders", 0))
    answer_at = next(i for i, step in enumerate(plan.steps) if isinstance(step, Answer))
    assert Await(NEW_LEADERS, brokers=frozenset({2})) in plan.steps[:answer_at]


def test_a_partition_no_other_live_isr_member_can_lead_is_remaining_and_kept():
    state = cluster(topics={"orders": [(1, 2, 3), (1, 3, 2)], "single": [(1,)]}, shutting_down=(3,),
                    states={("orders", 0): (1, (1,)), ("orders", 1): (1, (1, 3))})  # broker 3 is stopping
    plan, after = resign(state, 1, tp("orders", 0), tp("orders", 1), tp("single", 0))
    assert plan.reply.error is ErrorCode.NONE
    assert plan.reply.remaining == (tp("orders", 0), tp("orders", 1), tp("single", 0))
    assert not writes(plan) and after.partition_states[tp("orders", 0)].leader == 1


def test_a_partition_the_broker_does_not_lead_is_untouched_and_a_repeat_changes_nothing():
    state = cluster(topics={"orders": [(2, 1, 3)], "other": [(2, 3)]})
    plan, _ = resign(state, 1, tp("orders", 0), tp("other", 0), tp("missing", 4))
    assert plan.reply.error is ErrorCode.NONE and plan.reply.remaining == ()
    assert not writes(plan) and not stops(plan) and not sent_partitions(plan, 1)
    _, state = resign(cluster(topics={"orders": [(1, 2, 3)]}), 1, tp("orders", 0))
    plan, _ = resign(state, 1, tp("orders", 0))
    assert not writes(plan) and plan.reply.remaining == ()


def test_a_topic_being_deleted_is_left_to_the_deletion():
    state = cluster(topics={"orders": [(1, 2, 3)]}, deleting={"orders": frozenset({(0, 1), (0, 2), (0, 3)})})
    plan, _ = resign(state, 1, tp("orders", 0))
    assert not writes(plan) and plan.reply.remaining == ()


def test_unknown_or_stale_brokers_are_refused():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, _ = resign(state, 9, tp("orders", 0))
    assert plan.reply.error is ErrorCode.BROKER_NOT_AVAILABLE and not writes(plan)
    for broker_epoch in (55, 0):
        plan, _ = resign(state, 1, tp("orders", 0), broker_epoch=broker_epoch)
        assert plan.reply.error is ErrorCode.STALE_BROKER_EPOCH and not writes(plan)
