"""Disk stories: a torn write after a power loss, and an fsync that fails (issue 61).

The simulated disk (sim_members.DiskLog) keeps a prefix of what a log held unsynced when the power
goes, cut at a batch boundary as the real log's recovery cuts a torn file; an fsync that fails leaves
the batch in the page cache, and the broker's own storage-error path (leader_side.storage_failure_answer,
follower_side.follower_append_failed, log_dir_failures.halts_broker) answers the producer and halts the
broker, its ZooKeeper session ended first. The first story uses the stub controller, the others the real
controllers over simulated ZooKeeper.
"""

from __future__ import annotations


from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import ReplicaRole
from replog.common.clock import ManualClock
from replog.common.zk import schema
from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_members import DiskLog
from tests.scenario.broker.sim_schedule import heal_everything_and_converge
from tests.scenario.broker.sim_zk_cluster import ZkSimCluster, started_cluster
from tests.unit.broker.core.fake_log import FakeBatchHeader

KEEP_ALL = 0.999  # the fraction of an unsynced tail a loss keeps: all of it (a torn write that kept everything)
KEEP_NONE = 0.0
HEADER = FakeBatchHeader()


def fetch_rounds(cluster: SimCluster, rounds: int, followers=(2, 3)) -> None:
    for _ in range(rounds):
        for follower_id in followers:
            cluster.fetch(follower_id)
        cluster.check_invariants()


def test_a_torn_write_keeps_a_prefix_of_the_unsynced_tail_cut_at_a_batch():
    log = DiskLog()
    log.append_as_leader("synced", 0, fsync=True, validated=HEADER)
    log.append_as_leader("a", 0, fsync=True, validated=HEADER)
    for payload in ("b", "c", "d"):
        log.append_as_leader(payload, 0, fsync=False, validated=HEADER)
    assert log.lose_unsynced(0.5) == (1, 2)  # of 3 unsynced batches, int(0.5 * 4) = 2 survive
    assert log.payloads() == ["synced", "a", "b", "c"]
    log.append_as_leader("e", 0, fsync=False, validated=HEADER)
    assert log.lose_unsynced(None) == (1, 0) and log.payloads() == ["synced", "a", "b", "c"]
    assert log.lose_unsynced(KEEP_ALL) == (0, 0), "what survived is on the disk now"


def test_after_a_failed_fsync_no_later_fsync_makes_the_failed_pages_durable():
    log = DiskLog()
    log.append_as_leader("a", 0, fsync=True, validated=HEADER)
    log.fail_next_fsync(KEEP_NONE)
    try:
        log.append_as_leader("b", 0, fsync=True, validated=HEADER)
        raise AssertionError("the fsync should have failed")
    except OSError as failed:
        assert "fsync" in str(failed)
    assert log.payloads() == ["a", "b"] and log.failed_fsync == KEEP_NONE  # in the page cache only
    log.append_as_leader("c", 0, fsync=True, validated=HEADER)  # only a broker that carried on does this
    assert log.synced_end_offset == 1
    assert log.lose_unsynced(None) == (2, 0) and log.payloads() == ["a"]


def test_a_torn_power_loss_leaves_an_unacknowledged_record_on_the_old_leader_and_it_is_truncated_away():
    cluster = SimCluster(ManualClock(), durable=True)
    cluster.start()
    first = cluster.produce("a")
    fetch_rounds(cluster, 2)
    assert first.ok and cluster.broker(1).role is ReplicaRole.LEADER

    # Leader 1's disk fails the fsync of "b": the producer is told STORAGE_ERROR, the broker halts, and the
    # torn write keeps "b", which no follower fetched and no one acknowledged.
    cluster.fail_next_fsync(1, KEEP_ALL)
    refused = cluster.produce("b")
    old_leader = cluster.broker(1)
    assert refused.error_code is ErrorCode.STORAGE_ERROR and not refused.ok
    assert not old_leader.alive and old_leader.dir_failures.offline
    assert old_leader.log.payloads() == ["a", "b"] and cluster.logs()[2] == ["a"]
    assert (cluster.fsync_errors, cluster.torn_writes, cluster.power_losses) == (1, 1, 0)

    # Broker 2 leads a newer epoch and commits "c" at the offset "b" holds on broker 1.
    cluster.deliver_all()
    assert cluster.controller.leader == 2
    replacing = cluster.produce("c")
    fetch_rounds(cluster, 2, followers=(3,))
    assert replacing.ok and cluster.committed[1].payload == "c"

    # Broker 1 comes back and follows: its epoch's end on the new leader is offset 1, so "b" goes.
    cluster.restart(1)
    cluster.deliver_all()
    fetch_rounds(cluster, 3, followers=(1, 3))
    assert "broker 1: truncated to 1" in cluster.events
    assert cluster.logs() == {1: ["a", "c"], 2: ["a", "c"], 3: ["a", "c"]}
    assert [t.payload for t in cluster.acked] == ["a", "c"]


def replicate(cluster: ZkSimCluster, rounds: int = 4) -> None:
    for _ in range(rounds):
        for broker_id in cluster.brokers:
            cluster.fetch(broker_id)
        cluster.deliver_all()
        cluster.tick(100)
        cluster.check_invariants()


def test_a_leader_whose_fsync_fails_answers_storage_error_halts_and_loses_nothing_acknowledged():
    cluster = started_cluster()
    leader_id = cluster.controller.leader
    acked = [cluster.produce(f"a{n}", broker_id=leader_id) for n in range(3)]
    replicate(cluster)
    assert all(ticket.ok for ticket in acked)
    epoch_before = cluster.controller.leader_epoch

    cluster.fail_next_fsync(leader_id, KEEP_NONE)
    refused = cluster.produce("lost", broker_id=leader_id)
    assert refused.broker_code is ErrorCode.STORAGE_ERROR  # leader_side's answer to a failed append
    halted = cluster.broker(leader_id)
    assert not halted.alive and "fsync" in halted.halting
    # Its session ended on the way out: the registration is gone now, not after a session timeout.
    assert schema.broker_path(leader_id) not in cluster.zk.nodes
    assert halted.log.payloads() == ["a0", "a1", "a2"], "the failed batch did not survive"

    replicate(cluster)
    assert refused.error_code is ErrorCode.STORAGE_ERROR and refused not in cluster.acked
    new_leader = cluster.leader()
    assert new_leader.broker_id != leader_id and cluster.controller.leader_epoch > epoch_before
    assert new_leader.log.payloads()[:3] == ["a0", "a1", "a2"]
    assert cluster.produce("after", broker_id=new_leader.broker_id).broker_code in (None, ErrorCode.NONE)

    heal_everything_and_converge(cluster)  # the halted broker starts again, uncleanly, and catches up
    assert cluster.broker(leader_id).alive and cluster.logs()[leader_id] == new_leader.log.payloads()
    assert (cluster.fsync_errors, cluster.crashes) == (1, 1)


def test_a_follower_whose_fsync_fails_halts_and_the_leader_carries_on():
    cluster = started_cluster()
    leader_id = cluster.controller.leader
    follower_id = next(b for b in cluster.brokers if b != leader_id)
    cluster.fail_next_fsync(follower_id, 0.5)
    ticket = cluster.produce("x", broker_id=leader_id)
    replicate(cluster)
    follower = cluster.broker(follower_id)
    assert not follower.alive and follower.dir_failures.offline
    assert follower.log.payloads() in ([], ["x"])  # one unsynced batch: lost, or kept by the tear
    assert schema.broker_path(follower_id) not in cluster.zk.nodes
    assert ticket.ok, "the other follower and the leader still make min.insync.replicas"
    heal_everything_and_converge(cluster)
    assert cluster.logs()[follower_id] == ["x"]
