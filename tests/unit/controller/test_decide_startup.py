"""Stories: a controller takes its seat (seed D; docs/architecture.md, "Who holds the seat")."""

import random

import pytest
from controller_story import brokers, cluster, leader_and_isr, run, stops, tp, writes

from replog.common.core.partitions import NO_LEADER
from replog.controller.core import decide
from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import (
    AlterPartitionItem,
    AlterPartitionReceived,
    BrokersChanged,
    ControlledShutdownRequested,
    PreferredElectionRequested,
    Startup,
)
from replog.controller.core.model import (
    ClusterSnapshot,
    ControllerSettings,
    ControllerState,
    LeaderAndIsr,
    ReplicaAssignment,
)
from replog.controller.core.plan import CreatePartitionState, LoadState


def snapshot_of(state, *, live=None, epoch=8, **extra):
    return ClusterSnapshot(
        controller_id=2, controller_epoch=epoch,
        live_brokers=state.live_brokers if live is None else brokers(*live),
        assignments=state.assignments, partition_states=state.partition_states, **extra)


def test_the_new_controller_loads_the_cluster_and_tells_every_broker_everything():
    zk = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1)], "audit": [(3, 1)]})
    plan, after = run(ControllerState.empty(), Startup(snapshot_of(zk)))
    assert isinstance(plan.state_updates[0], LoadState)
    assert (after.controller_id, after.controller_epoch) == (2, 8)
    assert after.partition_states == zk.partition_states and after.assignments == zk.assignments
    requests = leader_and_isr(plan)
    assert all(r.init for r in requests.values())
    assert {d.partition for d in requests[3].partitions} == {tp("orders", 0), tp("orders", 1), tp("audit", 0)}
    (metadata,) = plan.update_metadata
    assert metadata.full and metadata.broker_ids == (1, 2, 3) and len(metadata.partitions) == 3
    assert not plan.zk_writes


def test_brokers_that_died_while_no_controller_watched_leave_leaderships_and_isrs():
    zk = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1)]})
    plan, after = run(ControllerState.empty(), Startup(snapshot_of(zk, live=(2, 3))))
    assert writes(plan) == {tp("orders", 0): LeaderAndIsr(2, 1, (2, 3), 8, 1),
                            tp("orders", 1): LeaderAndIsr(2, 0, (2, 3), 8, 1)}
    assert set(leader_and_isr(plan)) == {2, 3}


def test_partitions_whose_state_was_never_written_are_started():
    zk = cluster(topics={"orders": [(1, 2)]}, states={("orders", 0): None})
    plan, _ = run(ControllerState.empty(), Startup(snapshot_of(zk)))
    assert plan.zk_writes == (CreatePartitionState(tp("orders", 0), LeaderAndIsr(1, 0, (1, 2), 8, 0)),)


def test_an_offline_partition_is_elected_if_its_isr_member_is_back():
    zk = cluster(topics={"orders": [(1, 2)]}, states={("orders", 0): LeaderAndIsr(NO_LEADER, 3, (2,), 6, 5)})
    plan, after = run(ControllerState.empty(), Startup(snapshot_of(zk)))
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(2, 4, (2,), 8, 6)
    assert after.offline_partition_count == 0


def test_settings_survive_the_seat_change():
    settings = ControllerSettings(leader_imbalance_per_broker_percentage=30)
    zk = cluster(topics={"orders": [(1, 2)]})
    _, after = run(ControllerState.empty(settings), Startup(snapshot_of(zk)))
    assert after.settings == settings


def test_a_controller_without_a_seat_answers_rpcs_not_controller_and_decides_nothing():
    idle = ControllerState.empty()
    rng = random.Random(0)
    item = AlterPartitionItem(tp("orders", 0), 0, (1,), 0, (101,))
    assert decide(idle, AlterPartitionReceived(1, 0, (item,)), rng).reply.error is ErrorCode.NOT_CONTROLLER
    assert decide(idle, ControlledShutdownRequested(1, 0), rng).reply.error is ErrorCode.NOT_CONTROLLER
    reply = decide(idle, PreferredElectionRequested((tp("orders", 0),)), rng).reply
    assert reply.results[0].error is ErrorCode.NOT_CONTROLLER
    plan = decide(idle, BrokersChanged(brokers(1)), rng)
    assert not plan.zk_writes and not plan.state_updates and plan.reply is None


def test_unknown_events_are_a_programming_error():
    with pytest.raises(TypeError):
        decide(cluster(), object(), random.Random(0))


def test_an_isr_naming_replicas_the_assignment_already_dropped_is_healed_not_trusted_less():
    # A reassignment's AR := RAR landed but its ISR := ISR ∩ RAR did not (two
    # multis, the first failed): the new controller must not choke on it.
    zk = cluster(live=(1, 2, 3, 4), topics={"orders": [(4, 1)]},
                 states={("orders", 0): LeaderAndIsr(2, 3, (2, 1, 4), 6, 8)})
    plan, after = run(ControllerState.empty(), Startup(snapshot_of(zk)))
    assert after.assignments[tp("orders", 0)] == ReplicaAssignment((4, 1))
    assert writes(plan)[tp("orders", 0)] == LeaderAndIsr(4, 4, (1, 4), 8, 9)
    assert stops(plan) == {2: {tp("orders", 0): True}}
