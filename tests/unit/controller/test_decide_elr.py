"""Stories: eligible leader replicas (KIP-966) as the ISR of a min.insync.replicas=2 topic dies."""

from dataclasses import replace

from controller_story import brokers, cluster, run, tp, writes

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import (
    AlterPartitionItem,
    AlterPartitionReceived,
    BrokersChanged,
    UncleanElectionRequested,
)
from replog.controller.core.model import TopicElectionConfig

ORDERS = tp("orders", 0)
MIN_ISR_2 = {"orders": TopicElectionConfig(min_insync_replicas=2)}


def whole_isr_dead():
    """RF 3, min ISR 2: broker 3, then 2, then the leader 1 die, one by one."""
    state = cluster(live=(1, 2, 3), topics={"orders": [(1, 2, 3)]}, configs=MIN_ISR_2)
    _, state = run(state, BrokersChanged(brokers(1, 2)))
    assert (state.partition_states[ORDERS].isr, state.partition_states[ORDERS].elr) == ((1, 2), ())
    _, state = run(state, BrokersChanged(brokers(1)))
    assert (state.partition_states[ORDERS].isr, state.partition_states[ORDERS].elr) == ((1,), (2,))
    _, state = run(state, BrokersChanged({}))
    after = state.partition_states[ORDERS]
    assert (after.leader, after.isr, after.elr) == (NO_LEADER, (1,), (2,))
    return state


def test_a_replica_outside_isr_and_elr_returning_alone_leaves_the_partition_offline():
    plan, after = run(whole_isr_dead(), BrokersChanged(brokers(3)))
    assert ORDERS not in writes(plan)
    assert after.partition_states[ORDERS].leader == NO_LEADER
    assert after.offline_partition_count == 1


def test_an_elr_member_returning_cleanly_leads_and_the_kept_member_stays_eligible():
    state = whole_isr_dead()
    _, state = run(state, BrokersChanged(brokers(3)))
    plan, after = run(state, BrokersChanged(brokers(2, 3)))
    written = writes(plan)[ORDERS]
    assert (written.leader, written.isr, written.elr) == (2, (2,), (1,))
    assert written.unclean_leader_epoch == -1
    assert plan.metrics.unclean_leader_elections == 0 and plan.metrics.lossy_leader_elections == ()
    assert after.offline_partition_count == 0


def test_an_elr_member_back_from_an_unclean_start_leaves_the_elr_and_does_not_lead():
    live = brokers(2)
    live[2] = replace(live[2], unclean_start=True)
    plan, after = run(whole_isr_dead(), BrokersChanged(live))
    assert writes(plan)[ORDERS].elr == ()
    assert after.partition_states[ORDERS].leader == NO_LEADER


def test_the_elr_comes_before_the_kept_isr_member_back_from_an_unclean_start():
    live = brokers(1, 2)
    live[1] = replace(live[1], unclean_start=True)
    plan, _ = run(whole_isr_dead(), BrokersChanged(live))
    written = writes(plan)[ORDERS]
    assert (written.leader, written.isr, written.elr) == (2, (2,), ())  # broker 1 is not eligible any more


def test_every_replica_back_from_a_power_loss_stays_offline_until_an_explicit_unclean_election():
    state = cluster(live=(1, 2, 3), topics={"orders": [(1, 2, 3)]}, configs=MIN_ISR_2)
    _, state = run(state, BrokersChanged({}))
    assert (state.partition_states[ORDERS].isr, state.partition_states[ORDERS].elr) == ((1,), (2, 3))
    live = {b: replace(info, broker_epoch=info.broker_epoch + 1, unclean_start=True,
                       lost_partitions=frozenset({ORDERS})) for b, info in brokers(1, 2, 3).items()}
    plan, state = run(state, BrokersChanged(live))
    assert state.partition_states[ORDERS].leader == NO_LEADER and state.partition_states[ORDERS].elr == ()
    plan, after = run(state, UncleanElectionRequested((ORDERS,)))
    written = writes(plan)[ORDERS]
    assert (written.leader, written.isr, written.elr) == (1, (1,), ())  # the last ISR member first
    assert written.unclean_leader_epoch == written.leader_epoch  # describe flags it
    assert plan.metrics.lossy_leader_elections == ((ORDERS, 1),) and plan.metrics.unclean_leader_elections == 1


def test_an_explicit_unclean_election_empties_the_elr_and_is_reported():
    state = whole_isr_dead()
    _, state = run(state, BrokersChanged(brokers(3)))
    plan, after = run(state, UncleanElectionRequested((ORDERS,)))
    written = writes(plan)[ORDERS]
    assert (written.leader, written.isr, written.elr) == (3, (3,), ())
    assert written.unclean_leader_epoch == written.leader_epoch
    assert plan.metrics.unclean_leader_elections == 1
    assert plan.reply.results[0].error is ErrorCode.NONE


def test_a_leader_shrinking_the_isr_below_min_isr_keeps_the_dropped_follower_eligible_until_it_rejoins():
    state = cluster(live=(1, 2, 3), topics={"orders": [(1, 2, 3)]}, configs=MIN_ISR_2,
                    states={("orders", 0): (1, (1, 2))})
    _, state = run(state, AlterPartitionReceived(1, 101, (AlterPartitionItem(ORDERS, 0, (1,), 0, (101,)),)))
    assert state.partition_states[ORDERS].elr == (2,)
    _, state = run(state, AlterPartitionReceived(1, 101, (AlterPartitionItem(ORDERS, 0, (1, 3), 1, (101, 103)),)))
    assert (state.partition_states[ORDERS].isr, state.partition_states[ORDERS].elr) == ((1, 3), ())


def test_a_topic_at_min_isr_1_never_keeps_an_elr():
    state = cluster(live=(1, 2, 3), topics={"orders": [(1, 2, 3)]})
    _, state = run(state, BrokersChanged(brokers(1)))
    _, state = run(state, BrokersChanged({}))
    assert state.partition_states[ORDERS].elr == ()
