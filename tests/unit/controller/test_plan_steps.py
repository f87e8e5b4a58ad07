"""Stories: in which order a plan is carried out (core/steps.py, core/sequencing.py)."""

import pytest
from controller_story import brokers, cluster, run, tp

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.events import BrokersChanged, ControlledShutdownRequested, TopicsCreated
from replog.controller.core.model import LeaderAndIsr
from replog.controller.core.sequencing import HEAD_START_S
from replog.controller.core.steps import NEW_LEADERS, REQUESTS, Answer, Apply, Await, Send, Write, check_order


def kinds(plan):
    return [type(step).__name__ for step in plan.steps]


def test_a_plain_plan_writes_applies_sends_waits_for_every_broker_then_answers():
    plan, _ = run(cluster(topics={"orders": [(1, 2, 3)]}), TopicsCreated({"new": {0: (1, 2, 3)}}))
    assert kinds(plan) == ["Write", "Apply", "Send", "Await", "Answer"]
    assert plan.steps[2].wave == REQUESTS and plan.steps[3] == Await()


def test_a_broker_failure_sends_the_new_leaders_before_the_isr_only_changes_are_written():
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1)]})
    plan, _ = run(state, BrokersChanged(brokers(2, 3)))
    new_leader, first_wave, head_start, isr_only, apply, requests, every_answer, answer = plan.steps
    assert [w.partition for w in new_leader.writes] == [tp("orders", 0)]
    assert first_wave.wave == NEW_LEADERS and {r.broker_id for r in first_wave.leader_and_isr} == {2, 3}
    assert head_start == Await(NEW_LEADERS, bound_s=HEAD_START_S) == Await(NEW_LEADERS, bound_s=1.0)
    assert [w.partition for w in isr_only.writes] == [tp("orders", 1)]
    assert apply == Apply() and every_answer == Await() and answer == Answer()
    assert requests.wave == REQUESTS and requests.omit_delivered_by == NEW_LEADERS


def test_a_dead_follower_alone_is_written_and_sent_after_apply():
    plan, _ = run(cluster(topics={"orders": [(1, 2, 3)]}), BrokersChanged(brokers(1, 2)))
    assert kinds(plan) == ["Write", "Apply", "Send", "Await", "Answer"]


def test_a_new_leader_that_registered_in_the_same_event_is_told_after_apply():
    """The first wave goes out against the state before the plan, which has no address for broker 1."""
    state = cluster(live=(2, 3), topics={"orders": [(1, 2, 3)]},
                    states={("orders", 0): LeaderAndIsr(NO_LEADER, 4, (1,), 6, 9)})
    plan, _ = run(state, BrokersChanged(brokers(1, 2, 3)))
    assert kinds(plan) == ["Write", "Apply", "Send", "Await", "Answer"]
    assert plan.sends[0].omit_delivered_by is None


def test_a_controlled_shutdown_is_answered_once_the_new_leaders_answered_then_every_broker_is_awaited():
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(1, 2, 3), (1, 3, 4)]})
    plan, _ = run(state, ControlledShutdownRequested(1, 101))
    assert kinds(plan)[-3:] == ["Await", "Answer", "Await"]
    leaders_answered, answer, every_answer = plan.steps[-3:]
    # brokers 2 and 3 take over; broker 4 only follows a moved partition and does not hold the answer
    assert leaders_answered == Await(NEW_LEADERS, brokers=frozenset({2, 3}))
    assert answer.reply.remaining == () and every_answer == Await()


def test_a_controlled_shutdown_of_a_follower_waits_for_every_other_broker():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, _ = run(state, ControlledShutdownRequested(3, 103))
    assert kinds(plan) == ["Write", "Apply", "Send", "Await", "Answer", "Await"]
    assert plan.steps[3] == Await(REQUESTS, brokers=frozenset({1, 2}))


def test_a_controlled_shutdown_refused_sends_nothing_and_answers():
    plan, _ = run(cluster(topics={"orders": [(1, 2, 3)]}), ControlledShutdownRequested(9, 0))
    assert kinds(plan) == ["Apply", "Answer"]


@pytest.mark.parametrize("steps", [
    (Apply(),),
    (Apply(), Answer(), Answer()),
    (Apply(), Write(()), Answer()),
    (Apply(), Await("nobody"), Answer()),
    (Apply(), Send(REQUESTS), Answer()),
    (Apply(), Send(REQUESTS), Await(REQUESTS, bound_s=1.0), Answer()),
])
def test_steps_out_of_order_are_a_controller_bug(steps):
    with pytest.raises(AssertionError):
        check_order(steps)
