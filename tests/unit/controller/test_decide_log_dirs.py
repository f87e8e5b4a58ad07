"""Stories: a broker's log directory fails; its replicas there go offline, the broker stays (issue 40)."""

from dataclasses import replace

from controller_story import brokers, cluster, run, sent_partitions, stops, tp, writes

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import AlterPartitionItem, AlterPartitionReceived, BrokersChanged
from replog.controller.core.events import LogDirsOfflineReported as Offline
from replog.controller.core.model import LeaderAndIsr


def report(broker_id, *partitions, broker_epoch=None):
    return Offline(broker_id, 100 + broker_id if broker_epoch is None else broker_epoch, ("/disk2",), partitions)


def test_a_led_partition_moves_and_a_followed_one_shrinks_while_the_broker_keeps_the_rest():
    state = cluster(topics={"orders": [(1, 2, 3), (2, 1, 3), (1, 2, 3)]})
    plan, after = run(state, report(1, tp("orders", 0), tp("orders", 1)))
    assert plan.reply.error is ErrorCode.NONE
    assert writes(plan) == {tp("orders", 0): LeaderAndIsr(2, 1, (2, 3), 7, 1),
                            tp("orders", 1): LeaderAndIsr(2, 0, (2, 3), 7, 1)}
    assert stops(plan) == {1: {tp("orders", 0): False, tp("orders", 1): False}}
    assert tp("orders", 2) not in writes(plan)  # on a directory still online: untouched
    assert 1 in after.live_brokers and after.live_brokers[1].offline_partitions == {tp("orders", 0), tp("orders", 1)}


def test_an_offline_replica_is_not_elected_again_while_the_registration_stands():
    state = cluster(topics={"orders": [(1, 2)]})
    _, state = run(state, report(1, tp("orders", 0)))
    assert state.partition_states[tp("orders", 0)].leader == 2
    plan, state = run(state, BrokersChanged(brokers(1)))  # broker 2 dies: broker 1 may not take over
    assert writes(plan)[tp("orders", 0)].leader == NO_LEADER
    plan, _ = run(state, AlterPartitionReceived(2, 102, (
        AlterPartitionItem(tp("orders", 0), 1, (2, 1), 1, (102, 101)),)))
    assert all(r.error is not ErrorCode.NONE for r in plan.reply.results) or not writes(plan)


def test_an_isr_expansion_to_an_offline_replica_is_refused():
    state = cluster(topics={"orders": [(1, 2)]}, states={("orders", 0): (2, (2,))})
    live = dict(state.live_brokers)
    live[1] = replace(live[1], offline_partitions=frozenset({tp("orders", 0)}))
    state = replace(state, live_brokers=live)
    plan, _ = run(state, AlterPartitionReceived(2, 102, (
        AlterPartitionItem(tp("orders", 0), 0, (2, 1), 0, (102, 101)),)))
    (result,) = plan.reply.results
    assert result.error is ErrorCode.INELIGIBLE_REPLICA and "offline log directory" in result.message


def test_a_restarted_broker_registers_without_offline_replicas_and_rejoins():
    state = cluster(topics={"orders": [(1, 2)]})
    _, state = run(state, report(1, tp("orders", 0)))
    restarted = brokers(1, 2)
    restarted[1] = replace(restarted[1], broker_epoch=500)
    plan, after = run(state, BrokersChanged(restarted))
    assert after.live_brokers[1].offline_partitions == frozenset()
    assert tp("orders", 0) in sent_partitions(plan, 1)  # a follower again, fetching to rejoin the ISR


def test_a_stale_or_unknown_broker_is_refused():
    state = cluster(topics={"orders": [(1, 2)]})
    plan, _ = run(state, report(1, tp("orders", 0), broker_epoch=7))
    assert plan.reply.error is ErrorCode.STALE_BROKER_EPOCH and not writes(plan)
    plan, _ = run(state, report(9, tp("orders", 0)))
    assert plan.reply.error is ErrorCode.BROKER_NOT_AVAILABLE


def test_a_partition_with_no_other_replica_stays_leaderless_and_a_repeat_changes_nothing():
    state = cluster(topics={"single": [(1,)]})
    plan, state = run(state, report(1, tp("single", 0)))
    assert writes(plan)[tp("single", 0)].leader == NO_LEADER
    plan, _ = run(state, report(1, tp("single", 0)))
    assert plan.reply.error is ErrorCode.NONE and not writes(plan)
