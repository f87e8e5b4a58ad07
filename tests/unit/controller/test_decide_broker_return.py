"""Stories: brokers register (again)."""

from dataclasses import replace

from controller_story import brokers, cluster, leader_and_isr, run, tp, writes

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.events import BrokersChanged
from replog.controller.core.model import LeaderAndIsr, TopicElectionConfig


def test_a_returning_broker_gets_init_with_all_its_replicas_and_rejoins_as_a_follower():
    state = cluster(live=(1, 2), topics={"orders": [(1, 2, 3), (3, 1, 2)], "audit": [(1, 2)]},
                    states={("orders", 0): (1, (1, 2)), ("orders", 1): (1, (1, 2))})
    plan, after = run(state, BrokersChanged(brokers(1, 2, 3)))
    request = leader_and_isr(plan)[3]
    assert request.init
    assert {d.partition for d in request.partitions} == {tp("orders", 0), tp("orders", 1)}
    assert not writes(plan)  # the leaders add it back through AlterPartition
    assert set(leader_and_isr(plan)) == {3}
    full = [m for m in plan.update_metadata if m.full]
    assert full[0].broker_ids == (3,) and len(full[0].partitions) == 3
    assert 3 in after.live_brokers


def test_an_offline_partition_is_elected_when_its_kept_isr_member_returns():
    state = cluster(live=(2, 3), topics={"orders": [(1, 2, 3)]},
                    states={("orders", 0): LeaderAndIsr(NO_LEADER, 4, (1,), 6, 9)})
    plan, after = run(state, BrokersChanged(brokers(1, 2, 3)))
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(1, 5, (1,), 7, 10)
    assert after.offline_partition_count == 0
    assert {d.partition for d in leader_and_isr(plan)[2].partitions} == {tp("orders", 0)}


def test_an_offline_partition_of_an_unclean_topic_takes_any_returning_replica():
    state = cluster(live=(4,), topics={"logs": [(1, 2, 3)]},
                    states={("logs", 0): LeaderAndIsr(NO_LEADER, 1, (1,), 6, 1)},
                    configs={"logs": TopicElectionConfig(unclean_leader_election=True)})
    plan, _ = run(state, BrokersChanged(brokers(2, 4)))
    assert writes(plan)[tp("logs", 0)] == LeaderAndIsr(2, 2, (2,), 7, 2, unclean_leader_epoch=2)
    assert plan.metrics.unclean_leader_elections == 1


def test_a_partition_created_while_all_its_replicas_were_down_starts_when_one_registers():
    state = cluster(live=(3,), topics={"orders": [(1, 2)]}, states={("orders", 0): None})
    plan, after = run(state, BrokersChanged(brokers(2, 3)))
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 0, (2,), 7, 0)
    (decision,) = leader_and_isr(plan)[2].partitions
    assert decision.is_new


def test_replicas_of_topics_being_deleted_are_not_listed_so_the_broker_deletes_them():
    state = cluster(live=(1, 2), topics={"gone": [(1, 2, 3)], "kept": [(3, 1)]},
                    deleting={"gone": frozenset({(0, 1)})})
    plan, _ = run(state, BrokersChanged(brokers(1, 2, 3)))
    assert {d.partition for d in leader_and_isr(plan)[3].partitions} == {tp("kept", 0)}


def test_a_returning_isr_member_that_lost_committed_records_leads_only_when_no_other_member_can():
    # Brokers 1 and 2 were the ISR; both come back from a power loss, and broker 1, the preferred
    # replica, says its recovery could not find committed records of orders-0: broker 2 leads.
    state = cluster(live=(3,), topics={"orders": [(1, 2, 3)]},
                    states={("orders", 0): LeaderAndIsr(NO_LEADER, 4, (1, 2), 6, 9)})
    live = brokers(1, 2, 3)
    live[1] = replace(live[1], lost_partitions=frozenset({tp("orders", 0)}))
    plan, _ = run(state, BrokersChanged(live))
    assert writes(plan)[tp("orders", 0)].leader == 2
    assert plan.metrics.lossy_leader_elections == ()


def test_the_only_isr_member_that_lost_committed_records_leads_only_where_unclean_elections_are_allowed():
    state = cluster(live=(2, 3), topics={"orders": [(1, 2, 3)]},
                    states={("orders", 0): LeaderAndIsr(NO_LEADER, 4, (1,), 6, 9)})
    live = brokers(1, 2, 3)
    live[1] = replace(live[1], lost_partitions=frozenset({tp("orders", 0)}))
    plan, after = run(state, BrokersChanged(live))
    assert tp("orders", 0) not in writes(plan), "no replica holds every committed record: the partition waits"
    assert after.offline_partition_count == 1 and plan.metrics.lossy_leader_elections == ()

    state = replace(state, topic_configs={"orders": TopicElectionConfig(unclean_leader_election=True)})
    plan, after = run(state, BrokersChanged(live))
    # an unclean election, the last ISR member first: its leader epoch recorded as the unclean one
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(1, 5, (1,), 7, 10, 5)
    assert plan.metrics.lossy_leader_elections == ((tp("orders", 0), 1),)
    assert plan.metrics.unclean_leader_elections == 1 and after.offline_partition_count == 0
    assert after.offline_partition_count == 0
