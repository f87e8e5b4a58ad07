"""Stories: a leader proposes a new ISR (AlterPartition)."""

from dataclasses import replace

from controller_story import broker, cluster, run, tp, writes

from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import AlterPartitionItem, AlterPartitionReceived, IsrChanged
from replog.controller.core.model import LeaderAndIsr, ReplicaAssignment


def orders(**overrides):
    """orders-0 on 1,2,3: leader 1, leader epoch 4, partition epoch 9."""
    overrides.setdefault("states", {("orders", 0): LeaderAndIsr(1, 4, (1, 2, 3), 6, 9)})
    return cluster(topics={"orders": [(1, 2, 3)]}, **overrides)


def registered(members):
    """Each member's broker epoch as controller_story registers it (100 + id)."""
    return tuple(100 + member for member in members)


def propose(state, new_isr, *, broker_id=1, broker_epoch=101, leader_epoch=4, partition_epoch=9, partition=0,
            member_epochs=None):
    epochs = registered(new_isr) if member_epochs is None else tuple(member_epochs)
    item = AlterPartitionItem(tp("orders", partition), leader_epoch, tuple(new_isr), partition_epoch, epochs)
    return run(state, AlterPartitionReceived(broker_id, broker_epoch, (item,)))


def only_result(plan):
    assert plan.reply.error is ErrorCode.NONE
    (result,) = plan.reply.results
    return result


def test_a_shrink_is_written_with_the_next_partition_epoch_and_answered_with_the_committed_state():
    plan, after = propose(orders(), (1, 3))
    committed = LeaderAndIsr(1, 4, (1, 3), 7, 10)
    assert writes(plan) == {tp("orders", 0): committed}
    assert only_result(plan).state == committed and only_result(plan).error is ErrorCode.NONE
    assert plan.metrics.isr_shrinks == 1
    assert after.partition_states[tp("orders", 0)] == committed


def test_the_change_reaches_other_brokers_as_metadata_not_as_leader_and_isr():
    plan, _ = propose(orders(), (1, 3))
    assert not plan.leader_and_isr
    (metadata,) = plan.update_metadata
    assert metadata.broker_ids == (1, 2, 3) and metadata.partitions[0].state.isr == (1, 3)


def test_an_expansion_is_accepted():
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    plan, _ = propose(state, (1, 2))
    assert only_result(plan).state.isr == (1, 2)
    assert plan.metrics.isr_expands == 1


def test_an_unregistered_or_restarted_sender_is_refused_as_a_whole():
    for broker_id, broker_epoch in ((1, 55), (9, 0)):
        plan, _ = propose(orders(), (1, 3), broker_id=broker_id, broker_epoch=broker_epoch)
        assert plan.reply.error is ErrorCode.STALE_BROKER_EPOCH and not plan.reply.results
        assert not plan.zk_writes


def test_a_broker_epoch_of_zero_is_refused_as_a_whole():
    # "Not given" would let any caller propose ISRs in the name of any leader.
    plan, _ = propose(orders(), (1, 3), broker_epoch=0)
    assert plan.reply.error is ErrorCode.STALE_BROKER_EPOCH and not plan.reply.results and not plan.zk_writes


def refusal(state, new_isr, **kwargs):
    plan, after = propose(state, new_isr, **kwargs)
    assert not plan.zk_writes and after.partition_states == state.partition_states
    result = only_result(plan)
    assert result.state == state.partition_states.get(result.partition)  # the current state, to catch up
    return result.error


def test_refusals_carry_the_reason_and_the_current_state():
    state = orders()
    assert refusal(state, (2, 3), broker_id=2, broker_epoch=102) is ErrorCode.NOT_LEADER
    assert refusal(state, (1, 3), leader_epoch=3) is ErrorCode.FENCED_LEADER_EPOCH
    assert refusal(state, (1, 3), leader_epoch=5) is ErrorCode.UNKNOWN_LEADER_EPOCH
    assert refusal(state, (1, 3), partition_epoch=8) is ErrorCode.INVALID_UPDATE_VERSION
    assert refusal(state, (2, 3)) is ErrorCode.INVALID_REQUEST  # the leader left itself out
    assert refusal(state, (1, 3, 3)) is ErrorCode.INVALID_REQUEST
    assert refusal(state, (1, 4)) is ErrorCode.INELIGIBLE_REPLICA  # not assigned
    assert refusal(state, (1, 3), partition=7) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_dead_and_shutting_down_brokers_cannot_join_the_isr():
    state = orders(live=(1, 2), states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    assert refusal(state, (1, 3)) is ErrorCode.INELIGIBLE_REPLICA
    state = orders(shutting_down=(2,), states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    assert refusal(state, (1, 2)) is ErrorCode.INELIGIBLE_REPLICA


def test_a_retry_of_an_applied_proposal_is_answered_with_the_current_state_and_writes_nothing():
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1, 3), 7, 10)})
    plan, _ = propose(state, (3, 1), partition_epoch=9)
    assert only_result(plan).error is ErrorCode.NONE and not plan.zk_writes
    assert only_result(plan).state.partition_epoch == 10


def test_each_item_of_a_batch_is_judged_on_its_own():
    state = cluster(topics={"orders": [(1, 2, 3), (1, 2, 3)]})
    items = (AlterPartitionItem(tp("orders", 0), 0, (1, 2), 0, (101, 102)),
             AlterPartitionItem(tp("orders", 1), 0, (1, 2), 5, (101, 102)))
    plan, _ = run(state, AlterPartitionReceived(1, 101, items))
    assert [r.error for r in plan.reply.results] == [ErrorCode.NONE, ErrorCode.INVALID_UPDATE_VERSION]
    assert plan.metrics.failed_isr_updates == 1


def test_when_every_target_replica_is_in_sync_the_reassignment_is_asked_to_finish():
    state = cluster(
        live=(1, 2, 3, 4),
        assignments={("orders", 0): ReplicaAssignment((4, 1, 2), adding=(4,), removing=(2,))},
        states={("orders", 0): LeaderAndIsr(1, 4, (1, 2), 6, 9)},
        reassignments={("orders", 0): (4, 1)},
    )
    plan, _ = propose(state, (1, 2, 4))
    assert plan.follow_ups == (IsrChanged((tp("orders", 0),)),)


def test_a_member_joins_only_in_the_registration_whose_fetch_caught_it_up():
    # KIP-903. Broker 2 caught up as epoch 102, then restarted and registered again as 202: a
    # proposal naming 102 (perhaps a resent copy the leader has since dropped) is about an
    # incarnation that no longer exists, and the new one may lack records the HW has passed.
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    restarted = replace(state, live_brokers={**state.live_brokers, 2: broker(2, broker_epoch=202)})
    plan, _ = propose(restarted, (1, 2), member_epochs=(101, 102))
    result = only_result(plan)
    assert result.error is ErrorCode.INELIGIBLE_REPLICA and not plan.zk_writes
    assert "broker 2" in result.message and "102" in result.message and "202" in result.message
    assert only_result(propose(restarted, (1, 2), member_epochs=(101, 202))[0]).error is ErrorCode.NONE


def test_a_member_joining_without_a_broker_epoch_is_refused():
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    result = only_result(propose(state, (1, 2), member_epochs=(101, 0))[0])
    assert result.error is ErrorCode.INELIGIBLE_REPLICA and "without a broker epoch" in result.message


def test_a_leader_of_the_previous_release_naming_no_broker_epochs_may_still_expand():
    # It cannot name them (the field is new); refused, no ISR it leads could grow, and a rolling upgrade
    # waits for each restarted broker to rejoin every ISR before the next (docs/deploy.md).
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    assert only_result(propose(state, (1, 2), member_epochs=())[0]).state.isr == (1, 2)


def test_members_already_in_the_isr_are_not_judged_by_broker_epoch():
    # A shrink names epochs the leader may not know (0) or that are old: it is accepted all the same.
    assert only_result(propose(orders(), (1, 3), member_epochs=(0, 55))[0]).error is ErrorCode.NONE
    assert only_result(propose(orders(), (1, 3), member_epochs=())[0]).error is ErrorCode.NONE
    # An expansion judges only the member that joins: 3's old epoch is not held against it.
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1, 3), 6, 9)})
    assert only_result(propose(state, (1, 2, 3), member_epochs=(0, 102, 55))[0]).error is ErrorCode.NONE


def test_broker_epochs_must_be_none_or_one_per_member():
    state = orders(states={("orders", 0): LeaderAndIsr(1, 4, (1,), 6, 9)})
    assert refusal(state, (1, 2), member_epochs=(102,)) is ErrorCode.INVALID_REQUEST
