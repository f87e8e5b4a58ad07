"""Stories: partitions move between brokers (KIP-455 reassignment, seed F)."""

from controller_story import cluster, leader_and_isr, run, stops, tp, writes

from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import AlterPartitionItem, AlterPartitionReceived, ReassignmentRequested, Startup
from replog.controller.core.model import (
    ClusterSnapshot,
    ControllerState,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicElectionConfig,
)
from replog.controller.core.plan import ClearReassignment, SetAssignment, SetPartitionState

ORDERS_0 = tp("orders", 0)


def five_brokers():
    return cluster(live=(1, 2, 3, 4, 5), topics={"orders": [(1, 2, 3)]})


def request(state, target):
    return run(state, ReassignmentRequested({ORDERS_0: target}))


def catch_up(state, new_isr):
    """The leader adds caught-up replicas; returns the plan and the state after any follow-ups."""
    current = state.partition_states[ORDERS_0]
    item = AlterPartitionItem(ORDERS_0, current.leader_epoch, tuple(new_isr), current.partition_epoch,
                              tuple(100 + member for member in new_isr))
    plan, state = run(state, AlterPartitionReceived(current.leader, 100 + current.leader, (item,)))
    for follow_up in plan.follow_ups:
        follow_plan, state = run(state, follow_up)
        plan = follow_plan
    return plan, state


def test_starting_adds_the_target_replicas_next_to_the_original_ones():
    plan, after = request(five_brokers(), (4, 5, 1))
    assert after.assignments[ORDERS_0] == ReplicaAssignment((4, 5, 1, 2, 3), adding=(4, 5), removing=(2, 3))
    assert writes(plan)[ORDERS_0] == LeaderAndIsr(1, 1, (1, 2, 3), 7, 1)  # leader epoch bumped
    requests = leader_and_isr(plan)
    assert set(requests) == {1, 2, 3, 4, 5}
    assert [d.is_new for d in requests[4].partitions] == [True]
    assert [d.is_new for d in requests[1].partitions] == [False]
    assert after.reassignments == {ORDERS_0: (4, 5, 1)}
    assert not any(isinstance(w, ClearReassignment) for w in plan.zk_writes)
    assert plan.reply.results[0].error is ErrorCode.NONE


def test_it_completes_once_every_target_replica_is_in_sync_and_the_leader_stays_if_it_can():
    _, state = request(five_brokers(), (4, 5, 1))
    plan, state = catch_up(state, (1, 2, 3, 4))
    assert not plan.follow_ups and ORDERS_0 in state.reassignments
    plan, state = catch_up(state, (1, 2, 3, 4, 5))
    assert [type(w) for w in plan.zk_writes] == [SetPartitionState, SetAssignment, ClearReassignment]
    assert writes(plan)[ORDERS_0] == LeaderAndIsr(1, 2, (1, 4, 5), 7, 4)
    assert state.assignments[ORDERS_0] == ReplicaAssignment((4, 5, 1))
    assert stops(plan) == {2: {ORDERS_0: True}, 3: {ORDERS_0: True}}
    assert {r.partitions[0].leader_epoch for r in plan.stop_replica} == {2}
    assert set(leader_and_isr(plan)) == {1, 4, 5}
    assert plan.metrics.partitions_moved == 1 and state.reassignments == {}
    assert state.partitions_by_broker[2] == {}


def test_a_leader_outside_the_target_hands_over_to_the_first_in_sync_target_replica():
    _, state = request(five_brokers(), (5, 4))
    plan, state = catch_up(state, (1, 2, 3, 4, 5))
    assert writes(plan)[ORDERS_0] == LeaderAndIsr(5, 2, (4, 5), 7, 3)
    assert stops(plan) == {1: {ORDERS_0: True}, 2: {ORDERS_0: True}, 3: {ORDERS_0: True}}
    assert plan.metrics.leader_elections == 1


def test_shrinking_to_replicas_already_in_sync_completes_in_one_plan():
    plan, state = request(five_brokers(), (2, 1))
    assert state.assignments[ORDERS_0] == ReplicaAssignment((2, 1))
    assert writes(plan)[ORDERS_0] == LeaderAndIsr(1, 1, (1, 2), 7, 1)  # one write, one bump
    assert stops(plan) == {3: {ORDERS_0: True}}
    assert ClearReassignment((ORDERS_0,)) in plan.zk_writes


def test_cancelling_goes_back_to_the_original_replicas_and_deletes_the_added_ones():
    _, state = request(five_brokers(), (4, 5, 1))
    _, state = catch_up(state, (1, 2, 3, 4))
    plan, state = run(state, ReassignmentRequested({ORDERS_0: None}))
    assert state.assignments[ORDERS_0] == ReplicaAssignment((1, 2, 3))
    assert state.partition_states[ORDERS_0].isr == (1, 2, 3)
    assert stops(plan) == {4: {ORDERS_0: True}, 5: {ORDERS_0: True}}
    assert state.reassignments == {} and ClearReassignment((ORDERS_0,)) in plan.zk_writes


def test_cancelling_nothing_is_answered_and_cleared():
    plan, _ = run(five_brokers(), ReassignmentRequested({ORDERS_0: None}))
    assert plan.reply.results[0].error is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert ClearReassignment((ORDERS_0,)) in plan.zk_writes


def test_bad_requests_are_refused_per_partition_and_cleared():
    state = cluster(live=(1, 2, 3), topics={"orders": [(1, 2, 3)]})
    plan, after = run(state, ReassignmentRequested({
        ORDERS_0: (1, 9), tp("orders", 5): (1, 2), tp("audit", 0): (1,),
    }))
    codes = {r.partition: r.error for r in plan.reply.results}
    assert codes == {ORDERS_0: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                     tp("orders", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     tp("audit", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert after.assignments == state.assignments
    for target in ((), (2, 2)):
        plan, _ = request(state, target)
        assert plan.reply.results[0].error is ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_the_same_request_seen_again_changes_nothing():
    _, state = request(five_brokers(), (4, 5, 1))
    plan, after = request(state, (4, 5, 1))
    assert not plan.zk_writes and not plan.leader_and_isr and after.assignments == state.assignments


def test_a_new_target_mid_way_drops_replicas_no_longer_wanted():
    _, state = request(five_brokers(), (4, 5, 1))
    _, state = catch_up(state, (1, 2, 3, 4))
    plan, state = request(state, (5, 2, 3))
    assert state.assignments[ORDERS_0] == ReplicaAssignment((5, 2, 3, 1), adding=(5,), removing=(1,))
    assert stops(plan) == {4: {ORDERS_0: True}}
    assert state.partition_states[ORDERS_0].isr == (1, 2, 3)


def test_a_reassignment_recorded_in_zookeeper_resumes_and_completes_after_failover():
    state = cluster(
        live=(1, 2, 3, 4),
        assignments={("orders", 0): ReplicaAssignment((4, 1, 2), adding=(4,), removing=(2,))},
        states={("orders", 0): LeaderAndIsr(2, 3, (2, 1, 4), 6, 8)},
    )
    snapshot = ClusterSnapshot(controller_id=1, controller_epoch=8, live_brokers=state.live_brokers,
                               assignments=state.assignments, partition_states=state.partition_states,
                               reassignment_requests={ORDERS_0: (4, 1)})
    plan, after = run(ControllerState.empty(), Startup(snapshot))
    assert after.assignments[ORDERS_0] == ReplicaAssignment((4, 1))
    assert writes(plan)[ORDERS_0] == LeaderAndIsr(4, 4, (1, 4), 8, 9)  # 2 is leaving: first target in sync
    assert stops(plan) == {2: {ORDERS_0: True}}
    assert ClearReassignment((ORDERS_0,)) in plan.zk_writes


def test_an_elr_member_the_assignment_dropped_before_the_state_write_landed_is_stopped_after_failover():
    # Found by the simulation: the multi with the state write (ELR without broker 3) failed, the one with
    # the assignment without broker 3 landed. Broker 3 is put back as a removing replica, as an ISR member is.
    state = cluster(live=(1, 2, 3), assignments={("orders", 0): ReplicaAssignment((1, 2))},
                    states={("orders", 0): LeaderAndIsr(1, 3, (1, 2), 6, 8, elr=(3,))},
                    configs={"orders": TopicElectionConfig(min_insync_replicas=3)})
    snapshot = ClusterSnapshot(controller_id=1, controller_epoch=8, live_brokers=state.live_brokers,
                               assignments=state.assignments, partition_states=state.partition_states,
                               topic_configs=state.topic_configs)
    plan, after = run(ControllerState.empty(), Startup(snapshot))
    assert after.assignments[ORDERS_0] == ReplicaAssignment((1, 2))
    assert (after.partition_states[ORDERS_0].isr, after.partition_states[ORDERS_0].elr) == ((1, 2), ())
    assert stops(plan) == {3: {ORDERS_0: True}}


def test_an_offline_partition_of_an_unclean_topic_leads_again_on_an_added_replica():
    # Found by the simulation (seed 1): moving an offline partition onto a live
    # broker must not leave it offline when the topic allows unclean election.
    state = cluster(live=(4,), topics={"logs": [(1, 2)]},
                    states={("logs", 0): LeaderAndIsr(-1, 3, (1,), 6, 5)},
                    configs={"logs": TopicElectionConfig(unclean_leader_election=True)})
    plan, after = run(state, ReassignmentRequested({tp("logs", 0): (4,)}))
    assert after.partition_states[tp("logs", 0)].leader == 4
    assert plan.metrics.unclean_leader_elections == 1
