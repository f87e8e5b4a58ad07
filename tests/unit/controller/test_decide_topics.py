"""Stories: topics appear, grow, and change config (seed B.1, seed H)."""

from controller_story import cluster, leader_and_isr, run, tp, writes

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.events import PartitionsAdded, TopicConfigChanged, TopicsCreated
from replog.controller.core.model import LeaderAndIsr, TopicElectionConfig
from replog.controller.core.plan import CreatePartitionState


def test_a_new_topic_gets_leaders_and_isrs_and_its_replicas_start_empty():
    plan, after = run(cluster(), TopicsCreated({"orders": {0: (1, 2, 3), 1: (2, 3, 1)}}))
    assert plan.zk_writes == (
        CreatePartitionState(tp("orders", 0), LeaderAndIsr(1, 0, (1, 2, 3), 7, 0)),
        CreatePartitionState(tp("orders", 1), LeaderAndIsr(2, 0, (2, 3, 1), 7, 0)),
    )
    for request in plan.leader_and_isr:
        assert not request.init and all(d.is_new for d in request.partitions)
        assert len(request.partitions) == 2
    assert after.partitions_by_topic == {"orders": (0, 1)}
    assert tp("orders", 1) in after.partitions_by_broker[3]


def test_dead_replicas_are_left_out_of_the_first_isr():
    plan, _ = run(cluster(live=(2, 3)), TopicsCreated({"orders": {0: (1, 2, 3)}}))
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 0, (2, 3), 7, 0)
    assert set(leader_and_isr(plan)) == {2, 3}


def test_a_partition_with_no_live_replica_waits_without_a_state():
    plan, after = run(cluster(live=(3,)), TopicsCreated({"orders": {0: (1, 2)}}))
    assert not plan.zk_writes and not plan.leader_and_isr
    assert tp("orders", 0) in after.assignments and tp("orders", 0) not in after.partition_states


def test_the_topic_config_comes_with_the_topic():
    config = TopicElectionConfig(min_insync_replicas=2)
    _, after = run(cluster(), TopicsCreated({"orders": {0: (1, 2)}}, {"orders": config}))
    assert after.config_of("orders") == config


def test_a_watch_firing_again_for_a_known_topic_decides_nothing():
    state = cluster(topics={"orders": [(1, 2, 3)]})
    plan, after = run(state, TopicsCreated({"orders": {0: (1, 2, 3)}}))
    assert not plan.zk_writes and not plan.state_updates and after is state


def test_added_partitions_start_and_known_ones_are_ignored():
    state = cluster(topics={"orders": [(1, 2), (2, 3)]})
    plan, after = run(state, PartitionsAdded("orders", {0: (1, 2), 1: (2, 3), 2: (3, 1)}))
    assert writes(plan) == {tp("orders", 2): LeaderAndIsr(3, 0, (3, 1), 7, 0)}
    assert after.partitions_by_topic["orders"] == (0, 1, 2)


def test_turning_on_unclean_election_elects_leaders_for_offline_partitions_at_once():
    state = cluster(live=(1, 2), topics={"logs": [(3, 1, 2)]},
                    states={("logs", 0): LeaderAndIsr(NO_LEADER, 3, (3,), 6, 4)})
    plan, after = run(state, TopicConfigChanged("logs", TopicElectionConfig(unclean_leader_election=True)))
    assert writes(plan)[tp("logs", 0)] == LeaderAndIsr(1, 4, (1,), 7, 5, unclean_leader_epoch=4)
    assert plan.metrics.unclean_leader_elections == 1
    assert after.config_of("logs").unclean_leader_election


def test_a_config_for_a_topic_not_known_yet_is_kept_for_when_it_arrives():
    config = TopicElectionConfig(min_insync_replicas=2)
    _, after = run(cluster(), TopicConfigChanged("later", config))
    assert after.config_of("later") == config


def test_a_topic_whose_partitions_arrived_first_still_gets_its_config():
    # The topic znode's watch can deliver PartitionsAdded before TopicsCreated; the config must not be lost.
    state = cluster(live=(1, 2, 3))
    _, state = run(state, PartitionsAdded("risky", {0: (1, 2)}))
    config = TopicElectionConfig(unclean_leader_election=True)
    _, after = run(state, TopicsCreated({"risky": {0: (1, 2)}}, {"risky": config}))
    assert after.config_of("risky").unclean_leader_election
