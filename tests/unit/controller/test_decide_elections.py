"""Stories: preferred and unclean elections on request, and the automatic rebalance."""

from controller_story import cluster, run, tp, writes

from replog.common.core.partitions import NO_LEADER
from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import AutoRebalanceTick, PreferredElectionRequested, UncleanElectionRequested
from replog.controller.core.model import ControllerSettings, LeaderAndIsr
from replog.controller.core.plan import DeleteAdminRequest


def codes(plan):
    return {r.partition: r.error for r in plan.reply.results}


def test_preferred_election_moves_leadership_back_where_it_can():
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)]},
                    states={("orders", 0): (2, (2, 1)), ("orders", 1): (3, (3, 1)), ("orders", 2): (3, (3, 1))})
    plan, _ = run(state, PreferredElectionRequested(None, admin_request="preferred_replica_election"))
    assert codes(plan) == {tp("orders", 0): ErrorCode.NONE,
                           tp("orders", 1): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,  # 2 is not in the ISR
                           tp("orders", 2): ErrorCode.ELECTION_NOT_NEEDED}
    assert writes(plan) == {tp("orders", 0): LeaderAndIsr(1, 1, (2, 1), 7, 1)}
    assert plan.zk_writes[-1] == DeleteAdminRequest("preferred_replica_election")


def test_preferred_election_for_unknown_partitions_says_so():
    plan, _ = run(cluster(), PreferredElectionRequested((tp("nope", 0),)))
    assert codes(plan) == {tp("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_unclean_election_on_request_ignores_the_topic_setting():
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3)]},
                    states={("orders", 0): LeaderAndIsr(NO_LEADER, 2, (1,), 6, 3)}, live=(2, 3))
    plan, after = run(state, UncleanElectionRequested((tp("orders", 0), tp("orders", 1))))
    assert codes(plan) == {tp("orders", 0): ErrorCode.NONE, tp("orders", 1): ErrorCode.ELECTION_NOT_NEEDED}
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 3, (2,), 7, 4, unclean_leader_epoch=3)
    assert plan.metrics.unclean_leader_elections == 1
    assert plan.metrics.unclean_partitions == (tp("orders", 0),)


def test_unclean_election_with_no_live_replica_is_answered():
    state = cluster(live=(3,), topics={"orders": [(1, 2)]},
                    states={("orders", 0): LeaderAndIsr(NO_LEADER, 2, (1,), 6, 3)})
    plan, _ = run(state, UncleanElectionRequested((tp("orders", 0),)))
    assert codes(plan) == {tp("orders", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def imbalanced(settings=None):
    """Broker 1 is preferred for 4 partitions but leads only 3: 25% imbalance."""
    return cluster(topics={"orders": [(1, 2), (1, 2), (1, 2), (1, 2), (2, 1)]},
                   states={("orders", 3): (2, (2, 1))}, settings=settings)


def test_auto_rebalance_elects_preferred_leaders_of_a_broker_above_the_threshold():
    plan, after = run(imbalanced(), AutoRebalanceTick(now_ms=1_000))
    assert writes(plan) == {tp("orders", 3): LeaderAndIsr(1, 1, (2, 1), 7, 1)}
    assert after.last_rebalance_check_ms == 1_000


def test_auto_rebalance_leaves_a_broker_under_the_threshold_alone():
    plan, _ = run(imbalanced(ControllerSettings(leader_imbalance_per_broker_percentage=25)), AutoRebalanceTick(0))
    assert not writes(plan)


def test_auto_rebalance_runs_at_most_once_per_interval():
    settings = ControllerSettings(leader_imbalance_check_interval_ms=60_000)
    state = cluster(topics={"orders": [(1, 2)] * 4}, states={("orders", 3): (2, (2, 1))},
                    settings=settings, last_rebalance_check_ms=0)
    plan, _ = run(state, AutoRebalanceTick(59_999))
    assert not plan.zk_writes and not plan.state_updates
    plan, _ = run(state, AutoRebalanceTick(60_000))
    assert writes(plan)


def test_auto_rebalance_can_be_turned_off():
    state = cluster(topics={"orders": [(1, 2)]}, states={("orders", 0): (2, (2, 1))},
                    settings=ControllerSettings(auto_leader_rebalance_enable=False))
    plan, _ = run(state, AutoRebalanceTick(0))
    assert not plan.zk_writes
