"""Controller stories over the simulated ZooKeeper: the seat, failover, both fences, a broker's expiry.

Each test drives `ZkSimCluster` (the real controller core in two controller processes, the real
broker cores) step by step over a network without faults.
"""

from __future__ import annotations


from replog.broker.core.isr.isr_proposal import AlterPartitionProposal, IsrChangeKind
from replog.broker.core.partition import LeaderAndIsrDecision, ReplicaRole
from replog.common.zk import schema
from tests.scenario.broker.sim_cluster import AlterRequest
from tests.scenario.broker.sim_controller_node import ControllerRequest
from tests.scenario.broker.sim_members import REPLICAS, TP
from tests.scenario.broker.sim_zk_cluster import ZkSimCluster, started_cluster
from tests.scenario.sim_zookeeper import SESSION_TIMEOUT_MS


def settle(cluster: ZkSimCluster, rounds: int = 5) -> None:
    for _ in range(rounds):
        cluster.deliver_all()
        cluster.tick(100)
        cluster.check_invariants()


def controller_epoch(cluster: ZkSimCluster) -> int:
    return schema.decode_controller_epoch(cluster.zk.nodes[schema.CONTROLLER_EPOCH].data)


def test_the_first_controller_takes_the_seat_and_every_broker_hears_its_leader():
    cluster = started_cluster()
    assert cluster.active_node().node_id == 0 and controller_epoch(cluster) == 1
    assert cluster.nodes[4].active is False
    leader = cluster.controller.leader
    assert leader in REPLICAS and cluster.controller.isr == REPLICAS
    for broker in cluster.brokers.values():
        expected = ReplicaRole.LEADER if broker.broker_id == leader else ReplicaRole.FOLLOWER
        assert broker.role is expected and broker.broker_epoch > 0


def test_a_paused_controller_loses_the_seat_and_its_late_write_is_fenced():
    cluster = started_cluster()
    old = cluster.nodes[0]
    state = cluster.controller
    old.paused = True
    cluster.tick(SESSION_TIMEOUT_MS + 1)
    settle(cluster)
    assert cluster.active_node().node_id == 4 and controller_epoch(cluster) == 2
    assert old.active, "paused, it has not heard yet"
    # A leader's shrink, waiting in the paused process's socket, is the first thing it handles on waking.
    follower = next(b for b in REPLICAS if b != state.leader)
    new_isr = tuple(b for b in state.isr if b != follower)
    proposal = AlterPartitionProposal(TP, state.leader_epoch, new_isr, state.partition_epoch, IsrChangeKind.SHRINK,
                                      tuple(cluster.broker(b).broker_epoch for b in new_isr))
    leader = cluster.broker(state.leader)
    old.receive_alter_partition(AlterRequest(leader.broker_id, leader.broker_epoch, proposal))
    old.paused = False
    version_before = state.partition_epoch
    assert "fenced" in old.step()
    assert cluster.truth.fenced_writes_refused == 1 and not old.active
    assert cluster.controller.partition_epoch == version_before and cluster.controller.isr == REPLICAS
    settle(cluster)
    assert cluster.active_node().node_id == 4 and cluster.truth.acting == {1: 0, 2: 4}


def test_a_broker_refuses_a_deposed_controllers_leader_and_isr():
    cluster = started_cluster()
    cluster.nodes[0].kill()
    cluster.tick(SESSION_TIMEOUT_MS + 1)
    settle(cluster)
    assert controller_epoch(cluster) == 2
    broker = cluster.broker(next(b for b in REPLICAS if b != cluster.controller.leader))
    stale = LeaderAndIsrDecision(TP, broker.broker_id, cluster.controller.leader_epoch + 1, REPLICAS,
                                 cluster.controller.partition_epoch + 1, REPLICAS)
    outcome = cluster._take_controller_request(broker, ControllerRequest(0, 1, broker.broker_epoch, (stale,)))
    assert outcome == "refused: STALE_CONTROLLER_EPOCH" and broker.role is ReplicaRole.FOLLOWER


def test_a_broker_cut_off_from_zookeeper_expires_and_leaves_the_isr():
    cluster = started_cluster()
    follower = next(b for b in REPLICAS if b != cluster.controller.leader)
    cluster.isolate(follower)
    cluster.tick(SESSION_TIMEOUT_MS)
    cluster.deliver_all()
    assert follower in cluster.controller.isr and cluster.zk.expiries == 0, "not yet expired"
    cluster.tick(1)
    cluster.deliver_all()
    assert follower not in cluster.controller.isr and cluster.zk.expiries == 1
    cluster.heal(follower)
    settle(cluster)
    assert cluster.broker(follower).broker_epoch > 0, "registered again, with a new broker epoch"
