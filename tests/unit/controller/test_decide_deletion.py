"""Stories: a topic is deleted (StopReplica with delete, then the znodes go)."""

from controller_story import brokers, cluster, run, stops, tp, writes

from replog.controller.core.events import (
    BrokerResyncRequested,
    BrokersChanged,
    ReassignmentRequested,
    Startup,
    TopicDeletionReplicaStopped,
    TopicDeletionRequested,
)
from replog.controller.core.model import ClusterSnapshot, ControllerState
from replog.controller.core.plan import ClearReassignment, DeleteTopicZnodes


def two_topics(**kwargs):
    return cluster(topics={"gone": [(1, 2), (2, 3)], "kept": [(1, 3)]}, **kwargs)


def test_deletion_starts_by_stopping_and_deleting_every_live_replica():
    plan, after = run(two_topics(), TopicDeletionRequested(("gone",)))
    assert stops(plan) == {1: {tp("gone", 0): True}, 2: {tp("gone", 0): True, tp("gone", 1): True},
                           3: {tp("gone", 1): True}}
    # Each stop names the partition's current leader epoch: brokers refuse a stop at "any epoch".
    assert {p.leader_epoch for r in plan.stop_replica for p in r.partitions} == {
        after.partition_states[tp("gone", 0)].leader_epoch, after.partition_states[tp("gone", 1)].leader_epoch}
    assert all(p.leader_epoch >= 0 for r in plan.stop_replica for p in r.partitions)
    assert not any(isinstance(w, DeleteTopicZnodes) for w in plan.zk_writes)
    assert plan.update_metadata[0].deleted_topics == ("gone",)
    assert after.topics_being_deleted == {"gone": frozenset({(0, 1), (0, 2), (1, 2), (1, 3)})}


def test_the_znodes_go_once_every_replica_confirmed():
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    plan, state = run(state, TopicDeletionReplicaStopped(2, (tp("gone", 0), tp("gone", 1))))
    assert not plan.zk_writes
    plan, state = run(state, TopicDeletionReplicaStopped(1, (tp("gone", 0),)))
    plan, state = run(state, TopicDeletionReplicaStopped(3, (tp("gone", 1),)))
    assert plan.zk_writes == (DeleteTopicZnodes("gone", (0, 1)),)
    assert set(state.partitions_by_topic) == {"kept"}
    assert tp("gone", 0) not in state.partition_states and "gone" not in state.topics_being_deleted
    assert all(t.topic == "kept" for tps in state.partitions_by_broker.values() for t in tps)


def test_replicas_on_dead_brokers_are_not_waited_for():
    state = cluster(live=(4,), topics={"gone": [(1, 2), (2, 3)]})  # (leaders long dead: never mind)
    plan, _ = run(state, TopicDeletionRequested(("gone",)))
    assert plan.zk_writes == (DeleteTopicZnodes("gone", (0, 1)),)
    assert not plan.stop_replica


def test_a_broker_dying_with_replicas_pending_no_longer_holds_the_deletion_up():
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    _, state = run(state, TopicDeletionReplicaStopped(2, (tp("gone", 0), tp("gone", 1))))
    _, state = run(state, TopicDeletionReplicaStopped(3, (tp("gone", 1),)))
    plan, state = run(state, BrokersChanged(brokers(2, 3)))
    assert DeleteTopicZnodes("gone", (0, 1)) in plan.zk_writes


def test_a_failed_stop_keeps_the_replica_pending_and_late_answers_are_ignored():
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    plan, state = run(state, TopicDeletionReplicaStopped(1, (), failed=(tp("gone", 0),)))
    assert (0, 1) in state.topics_being_deleted["gone"] and not plan.zk_writes
    plan, state = run(state, TopicDeletionReplicaStopped(1, (tp("kept", 0),)))
    assert not plan.state_updates


def test_a_stop_lost_in_transit_is_sent_again_with_the_brokers_resync():
    # A 10K-partition StopReplica outlasted its deadline: the broker deleted the replicas, the
    # controller never heard, and the topic stayed half-deleted until a restart or a failover.
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    _, state = run(state, TopicDeletionReplicaStopped(2, (tp("gone", 0), tp("gone", 1))))
    _, state = run(state, TopicDeletionReplicaStopped(3, (tp("gone", 1),)))
    plan, state = run(state, BrokerResyncRequested(1, state.live_brokers[1].broker_epoch))
    assert stops(plan) == {1: {tp("gone", 0): True}}
    (init,) = plan.leader_and_isr
    assert init.init and {d.partition for d in init.partitions} == {tp("kept", 0)}
    plan, state = run(state, TopicDeletionReplicaStopped(1, (tp("gone", 0),)))
    assert plan.zk_writes == (DeleteTopicZnodes("gone", (0, 1)),)


def test_asking_twice_starts_nothing_twice():
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    plan, _ = run(state, TopicDeletionRequested(("gone",)))
    assert not plan.stop_replica and not plan.state_updates


def test_a_running_reassignment_of_the_topic_is_abandoned():
    _, state = run(two_topics(live=(1, 2, 3, 4)), ReassignmentRequested({tp("gone", 0): (4, 1)}))
    assert tp("gone", 0) in state.reassignments
    plan, state = run(state, TopicDeletionRequested(("gone",)))
    assert ClearReassignment((tp("gone", 0),)) in plan.zk_writes
    assert tp("gone", 0) not in state.reassignments
    assert 4 in stops(plan)  # the replica being added is deleted too


def test_no_election_touches_a_topic_being_deleted():
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    plan, _ = run(state, BrokersChanged(brokers(1, 3)))
    assert set(writes(plan)) == set()


def test_deletion_resumes_after_a_controller_failover():
    _, state = run(two_topics(), TopicDeletionRequested(("gone",)))
    snapshot = ClusterSnapshot(
        controller_id=2, controller_epoch=8, live_brokers=state.live_brokers,
        assignments=state.assignments, partition_states=state.partition_states,
        topics_being_deleted=frozenset({"gone"}),
    )
    plan, after = run(ControllerState.empty(), Startup(snapshot))
    assert stops(plan)[2] == {tp("gone", 0): True, tp("gone", 1): True}
    assert all(d.partition.topic == "kept" for r in plan.leader_and_isr for d in r.partitions)
    assert "gone" in after.topics_being_deleted
