"""Stories: brokers die (seed A; docs/architecture.md, "A broker failure")."""

import dataclasses

from controller_story import broker, cluster, leader_and_isr, run, sent_partitions, tp, wave, writes, writes_before

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.events import BrokersChanged
from replog.controller.core.model import LeaderAndIsr, TopicElectionConfig
from replog.controller.core.sequencing import without_delivered
from replog.controller.core.steps import NEW_LEADERS, REQUESTS


def kill(state, *dead):
    return run(state, BrokersChanged({b: info for b, info in state.live_brokers.items() if b not in dead}))


def test_partitions_led_by_the_dead_broker_get_the_next_isr_member_in_assignment_order():
    state = cluster(topics={"orders": [(1, 2, 3)]}, states={("orders", 0): (1, (1, 3, 2))})
    plan, after = kill(state, 1)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 1, (3, 2), 7, 1)
    assert after.partition_states[tp("orders", 0)].leader == 2
    assert plan.metrics.leader_elections == 1


def test_a_dead_follower_only_leaves_the_isr_and_the_leader_epoch_stays():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, _ = kill(state, 3)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(1, 0, (1, 2), 7, 1)
    assert plan.metrics.isr_shrinks == 1 and plan.metrics.leader_elections == 0


def test_every_change_goes_out_in_one_leader_and_isr_per_surviving_broker():
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)], "audit": [(1, 2), (2, 3)]})
    plan, _ = kill(state, 1)
    requests = leader_and_isr(plan)
    assert set(requests) == {2, 3}
    # orders-0 and audit-0 moved: every live replica hears. orders-1 and orders-2 only lose
    # broker 1 from their ISR: only their leaders (2 and 3) hear.
    assert sent_partitions(plan, 2) == {tp("orders", 0), tp("orders", 1), tp("audit", 0)}
    assert sent_partitions(plan, 3) == {tp("orders", 0), tp("orders", 2)}
    assert tp("audit", 1) not in writes(plan)  # broker 1 holds no replica of it
    assert not any(r.init for r in plan.leader_and_isr)
    (metadata,) = wave(plan, REQUESTS).update_metadata
    assert metadata.broker_ids == (2, 3) and len(metadata.partitions) == 4


def test_new_leaderships_are_written_first_and_go_out_in_a_first_wave():
    """The moved leaderships are sent as soon as they are written; ISR-only changes follow."""
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)], "audit": [(1, 2), (2, 3)]})
    plan, _ = kill(state, 1)
    moved = {tp("orders", 0), tp("audit", 0)}  # broker 1 led them; elsewhere it only leaves the ISR
    assert writes_before(plan, NEW_LEADERS) == 2
    assert {w.partition for w in plan.zk_writes[:2]} == moved
    assert {w.partition for w in plan.zk_writes[2:]} == {tp("orders", 1), tp("orders", 2)}
    first = {r.broker_id: {d.partition for d in r.partitions} for r in wave(plan, NEW_LEADERS).leader_and_isr}
    assert first == {2: moved, 3: {tp("orders", 0)}}
    later = {r.broker_id: {d.partition for d in r.partitions} for r in wave(plan, REQUESTS).leader_and_isr}
    assert later == {2: {tp("orders", 1)}, 3: {tp("orders", 2)}}


def test_an_isr_only_change_goes_to_the_leader_alone_and_to_every_brokers_metadata():
    """Only the leader acts on an ISR (its high watermark and acks=all); followers learn it from
    metadata, as they learn the leader's own AlterPartition changes."""
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(2, 3, 1), (4, 3, 1)]})
    plan, _ = kill(state, 1)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 0, (2, 3), 7, 1)
    assert {r.broker_id: {d.partition for d in r.partitions} for r in plan.leader_and_isr} == {
        2: {tp("orders", 0)}, 4: {tp("orders", 1)}}
    (metadata,) = plan.update_metadata
    assert metadata.broker_ids == (2, 3, 4)
    assert {d.partition: d.state.isr for d in metadata.partitions} == {tp("orders", 0): (2, 3), tp("orders", 1): (4, 3)}


def test_the_first_wave_tells_every_live_brokers_metadata_the_new_leaders():
    """Clients ask any broker for leaders: the moved ones reach every cache with the first wave."""
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)], "audit": [(1, 2), (2, 3)]})
    plan, _ = kill(state, 1)
    (metadata,) = wave(plan, NEW_LEADERS).update_metadata
    assert metadata.broker_ids == (2, 3) and not metadata.full
    assert {b.broker_id for b in metadata.live_brokers} == {2, 3}
    assert {d.partition: d.state.leader for d in metadata.partitions} == {tp("orders", 0): 2, tp("audit", 0): 2}
    (everything,) = wave(plan, REQUESTS).update_metadata  # the plan's own UpdateMetadata still carries them too
    assert {tp("orders", 0), tp("audit", 0)} <= {d.partition for d in everything.partitions}


def test_brokers_that_took_the_first_wave_are_not_sent_its_partitions_again():
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)], "audit": [(1, 2), (2, 3)]})
    plan, _ = kill(state, 1)
    moved = {tp("orders", 0), tp("audit", 0)}
    update_metadata, first_wave_metadata = wave(plan, REQUESTS).update_metadata, wave(plan, NEW_LEADERS).update_metadata
    slimmed = without_delivered(update_metadata, first_wave_metadata, frozenset({2, 4}))
    by_broker = {b: {d.partition for d in u.partitions} for u in slimmed for b in u.broker_ids}
    everything = {d.partition for d in update_metadata[0].partitions}
    assert by_broker[2] == by_broker[4] == everything - moved
    assert by_broker[3] == everything  # it did not answer the first wave: it may have missed it
    assert all(not u.full and {b.broker_id for b in u.live_brokers} == {2, 3, 4} for u in slimmed)


def test_only_the_very_decision_the_first_wave_carried_is_left_out():
    plan, _ = kill(cluster(topics={"orders": [(1, 2, 3)]}), 1)
    (update,) = wave(plan, REQUESTS).update_metadata
    (decision,) = update.partitions
    other = decision._replace(state=decision.state._replace(isr=(2,)))  # the same partition, told otherwise
    (again,) = without_delivered((dataclasses.replace(update, partitions=(other,)),),
                                 wave(plan, NEW_LEADERS).update_metadata, frozenset({2, 3}))
    assert again.partitions == (other,)


def test_without_an_answered_first_wave_the_update_goes_out_whole():
    plan, _ = kill(cluster(topics={"orders": [(1, 2, 3), (2, 3, 1)]}), 1)
    update_metadata, first_wave_metadata = wave(plan, REQUESTS).update_metadata, wave(plan, NEW_LEADERS).update_metadata
    assert without_delivered(update_metadata, first_wave_metadata, frozenset()) == update_metadata


def test_a_dead_follower_alone_sends_no_first_wave():
    plan, _ = kill(cluster(topics={"orders": [(1, 2, 3)]}), 3)
    first_wave = wave(plan, NEW_LEADERS)
    assert first_wave.leader_and_isr == () and first_wave.update_metadata == ()


def test_a_plan_that_writes_more_than_states_sends_everything_after_its_writes():
    from replog.controller.core.events import TopicsCreated

    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, _ = run(state, TopicsCreated({"new": {0: (1, 2, 3)}}))
    first_wave = wave(plan, NEW_LEADERS)
    assert first_wave.leader_and_isr == () and writes_before(plan, NEW_LEADERS) == 0 and plan.leader_and_isr
    assert first_wave.update_metadata == ()


def test_with_no_live_isr_member_the_partition_goes_offline_and_keeps_one_isr_member():
    state = cluster(topics={"orders": [(1, 2, 3)]}, states={("orders", 0): (1, (1,))})
    plan, after = kill(state, 1)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(NO_LEADER, 1, (1,), 7, 1)
    assert plan.metrics.offline_partitions == 1 == after.offline_partition_count


def test_when_the_whole_isr_dies_at_once_the_old_leader_is_the_member_kept():
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(1, 2, 3)]}, states={("orders", 0): (2, (1, 2))})
    plan, _ = kill(state, 1, 2)
    assert writes(plan)[tp("orders", 0)].isr == (2,)
    assert writes(plan)[tp("orders", 0)].leader == NO_LEADER


def test_unclean_election_only_where_the_topic_allows_it_and_it_is_counted():
    state = cluster(
        topics={"logs": [(1, 2, 3)], "orders": [(1, 2, 3)]},
        states={("logs", 0): (1, (1,)), ("orders", 0): (1, (1,))},
        configs={"logs": TopicElectionConfig(unclean_leader_election=True)},
    )
    plan, _ = kill(state, 1)
    assert writes(plan)[tp("logs", 0)] == LeaderAndIsr(2, 1, (2,), 7, 1, unclean_leader_epoch=1)
    assert writes(plan)[tp("orders", 0)].leader == NO_LEADER
    assert plan.metrics.unclean_leader_elections == 1
    assert plan.metrics.unclean_partitions == (tp("logs", 0),)  # named in the controller's log and span


def test_the_unclean_leader_epoch_is_kept_by_later_writes_and_outlived_by_a_clean_election():
    unclean = LeaderAndIsr(2, 2, (2, 3), 7, 2, unclean_leader_epoch=2)
    state = cluster(topics={"orders": [(1, 2, 3)]}, states={("orders", 0): unclean})
    plan, _ = kill(state, 3)
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 2, (2,), 7, 3, unclean_leader_epoch=2)
    plan, _ = kill(state, 2)
    # The record stays, but the leader in office (epoch 3) is no longer the unclean one.
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(3, 3, (3,), 7, 3, unclean_leader_epoch=2)


def test_a_broker_that_restarted_between_two_watches_is_treated_as_dead_then_back():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    live = dict(state.live_brokers)
    live[1] = broker(1, broker_epoch=999)
    plan, _ = run(state, BrokersChanged(live))
    assert writes(plan)[tp("orders", 0)].leader == 2  # its old leadership is gone
    assert leader_and_isr(plan)[1].init and leader_and_isr(plan)[1].broker_epoch == 999


def test_nothing_happens_when_the_broker_set_did_not_change():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, after = run(state, BrokersChanged(dict(state.live_brokers)))
    assert not plan.zk_writes and not plan.leader_and_isr and not plan.update_metadata
    assert after is state


def test_elections_never_pick_a_broker_in_controlled_shutdown():
    state = cluster(topics={"orders": [(1, 2, 3)]}, shutting_down=(2,))
    plan, after = kill(state, 1)
    assert writes(plan)[tp("orders", 0)].leader == 3


def test_a_dead_broker_is_no_longer_shutting_down():
    state = cluster(topics={"orders": [(1, 2, 3)]}, shutting_down=(3,))
    _, after = kill(state, 3)
    assert after.shutting_down_brokers == frozenset()


def test_partitions_of_topics_being_deleted_are_left_alone():
    state = cluster(topics={"gone": [(1, 2)]}, deleting={"gone": frozenset({(0, 2)})})
    plan, after = kill(state, 1)
    assert not writes(plan)
    assert after.partition_states[tp("gone", 0)].leader == 1


def test_only_the_dead_brokers_partitions_are_examined():
    state = cluster(live=(1, 2, 3, 4), topics={"a": [(1, 2)], "b": [(3, 4)]})
    plan, _ = kill(state, 1)
    assert set(writes(plan)) == {tp("a", 0)}
    assert set(leader_and_isr(plan)) == {2}


def test_a_broker_that_missed_a_request_gets_its_whole_state_again():
    from replog.controller.core.events import BrokerResyncRequested

    state = cluster(topics={"orders": [(1, 2, 3)], "audit": [(1, 3)]})
    epoch = state.live_brokers[2].broker_epoch
    plan, _ = run(state, BrokerResyncRequested(2, epoch))
    (request,) = plan.leader_and_isr
    assert request.broker_id == 2 and request.init
    assert {d.partition for d in request.partitions} == {tp("orders", 0)}
    assert [u.broker_ids for u in plan.update_metadata if u.full] == [(2,)]
    assert not plan.zk_writes
    # A newer registration got its INIT when it registered; a broker gone needs nothing.
    assert run(state, BrokerResyncRequested(2, epoch + 1))[0].leader_and_isr == ()
    assert run(state, BrokerResyncRequested(9, epoch))[0].leader_and_isr == ()
