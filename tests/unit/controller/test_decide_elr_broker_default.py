"""Stories: the ELR of a topic without its own min.insync.replicas follows the brokers' default (elr.py)."""

from dataclasses import replace

import pytest
from controller_story import brokers, cluster, run, tp, writes

from replog.common.core.errors import InvalidConfigError
from replog.common.core.partitions import NO_LEADER
from replog.controller.core.events import AlterPartitionItem, AlterPartitionReceived, BrokersChanged, TopicConfigChanged
from replog.controller.core.model import TopicElectionConfig

ORDERS = tp("orders", 0)


def registered(**defaults: int) -> dict:
    """Live brokers whose registrations carry these `min_insync_replicas` (b1=2: broker 1's is 2)."""
    ids = {int(name[1:]): value for name, value in defaults.items()}
    return {b: replace(info, min_insync_replicas_default=ids[b]) for b, info in brokers(*sorted(ids)).items()}


def orders_cluster(live: dict, configs=None, isr=(1, 2, 3)):
    state = cluster(live=(), topics={"orders": [(1, 2, 3)]}, configs=configs, states={("orders", 0): (1, isr)})
    return replace(state, live_brokers=live)


def shrink_to_leader_alone(state):
    """Leader 1 takes its followers out of the ISR (AlterPartition)."""
    current = state.partition_states[ORDERS]
    item = AlterPartitionItem(ORDERS, current.leader_epoch, (1,), current.partition_epoch, (101,))
    return run(state, AlterPartitionReceived(1, 101, (item,)))


def test_a_topic_without_its_own_keeps_an_elr_below_the_brokers_default():
    state = orders_cluster(registered(b1=2, b2=2, b3=2))
    _, state = run(state, BrokersChanged(registered(b1=2, b2=2)))
    assert (state.partition_states[ORDERS].isr, state.partition_states[ORDERS].elr) == ((1, 2), ())
    _, state = run(state, BrokersChanged(registered(b1=2)))
    assert (state.partition_states[ORDERS].isr, state.partition_states[ORDERS].elr) == ((1,), (2,))


def test_a_leader_shrinking_the_isr_below_the_brokers_default_keeps_its_followers_eligible():
    _, after = shrink_to_leader_alone(orders_cluster(registered(b1=2, b2=2, b3=2)))
    assert after.partition_states[ORDERS].elr == (2, 3)


def test_with_differing_defaults_the_lowest_live_one_counts():
    # Broker 3's leaders would acknowledge acks=all writes with one ISR member: 2 and 3 may miss them.
    _, after = shrink_to_leader_alone(orders_cluster(registered(b1=2, b2=2, b3=1, b4=3), isr=(1, 2)))
    assert after.partition_states[ORDERS].elr == ()
    # Once broker 3 is gone the lowest is 2 again.
    _, after = shrink_to_leader_alone(orders_cluster(registered(b1=2, b2=2, b4=3), isr=(1, 2)))
    assert after.partition_states[ORDERS].elr == (2,)


def test_a_topic_with_its_own_keeps_it_whatever_the_brokers_say():
    own_1 = {"orders": TopicElectionConfig(min_insync_replicas=1)}
    _, after = shrink_to_leader_alone(orders_cluster(registered(b1=2, b2=2, b3=2), configs=own_1))
    assert after.partition_states[ORDERS].elr == ()
    own_3 = {"orders": TopicElectionConfig(min_insync_replicas=3)}
    _, after = shrink_to_leader_alone(orders_cluster(registered(b1=1, b2=1, b3=1), configs=own_3))
    assert after.partition_states[ORDERS].elr == (2, 3)


def test_a_topic_whose_own_is_removed_follows_the_brokers_from_its_next_write():
    state = orders_cluster(registered(b1=2, b2=2, b3=2), configs={"orders": TopicElectionConfig(min_insync_replicas=1)})
    plan, state = run(state, TopicConfigChanged("orders", TopicElectionConfig()))
    assert not writes(plan)  # nothing rewritten: the rules apply at the next write
    _, after = shrink_to_leader_alone(state)
    assert after.partition_states[ORDERS].elr == (2, 3)


def test_the_elr_survives_the_last_live_broker_and_its_member_leads_cleanly_when_back():
    state = orders_cluster(registered(b1=2, b2=2, b3=2))
    for live in (registered(b1=2, b2=2), registered(b1=2), {}):
        _, state = run(state, BrokersChanged(live))
    after = state.partition_states[ORDERS]
    assert (after.leader, after.isr, after.elr) == (NO_LEADER, (1,), (2,))  # no broker left to say: kept
    _, state = run(state, BrokersChanged(registered(b3=2)))
    assert state.partition_states[ORDERS].leader == NO_LEADER  # 3 is in neither
    plan, state = run(state, BrokersChanged(registered(b2=2, b3=2)))
    written = writes(plan)[ORDERS]
    assert (written.leader, written.isr, written.elr, written.unclean_leader_epoch) == (2, (2,), (1,), -1)


def test_the_config_map_says_whether_the_topic_has_its_own():
    assert TopicElectionConfig.from_map({}) == TopicElectionConfig(False, None)
    assert TopicElectionConfig.from_map({"retention.ms": "5"}).min_insync_replicas is None
    assert TopicElectionConfig.from_map({"min.insync.replicas": "1"}) == TopicElectionConfig(False, 1)
    assert TopicElectionConfig.from_map({"unclean.leader.election.enable": "true"}) == TopicElectionConfig(True)
    with pytest.raises(InvalidConfigError, match="min.insync.replicas"):
        TopicElectionConfig.from_map({"min.insync.replicas": "0"})
