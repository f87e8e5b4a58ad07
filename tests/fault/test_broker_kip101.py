"""KIP-101's two scenarios with real processes: truncation by leader epoch, never to the HW.

Scenario 1, "high watermark truncation followed by immediate leader election":
a follower restarts with a stale HW checkpoint (it holds m1, m2; its checkpoint
says 0) and follows the leader; the leader dies before the follower fetches
again (here: the leader is killed, and the follower restarts and is told to
follow it before ZooKeeper notices), and the follower is elected. The seed's rule (truncate to the HW on
becoming a follower) would have cut m1 and m2 there and lost them. At process
level a restarted broker always leaves the ISR (its registration ends), so the
election here is an unclean one (forced through /admin/unclean_leader_election)
standing in for "the follower was still in the ISR"; what the test shows is
the broker's half: the
restarted follower keeps everything above its stale HW, so nothing is lost.
(The exact interleaving with the follower still in the ISR is
tests/scenario/broker/test_replication_story.py::test_kip101_hw_truncation_...)

Scenario 2, "replica divergence on restart after multiple hard failures": both
replicas die; the one that comes back first lost its unflushed tail (m2) in the
power failure (simulated by cutting its segment file), so it leads only once an
operator asks for an unclean election; it takes m3 at the same offset,
and the other comes back holding m2 there with a HW that covers it. The seed's
rule truncates nothing (HW 2 = its LEO) and the logs diverge forever; the
diverging-epoch answer makes it cut m2 and fetch m3, so the logs end identical.
"""

from __future__ import annotations


import pytest

from replog.broker.log import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.common.records import decode_records, iter_batches
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2

from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    batch_of,
    create_topic,
    describe,
    partition_state,
    produce_raw,
    registration,
    request_unclean_election,
    start_cluster,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

SESSION_MS = 3000
SCENARIO_1_SESSION_MS = 6000  # broker 2 must restart and follow before broker 1's session ends


def segment_path(cluster, broker_id: int, topic: str):
    return cluster.data_dir(f"broker-{broker_id}") / f"{topic}-0" / "00000000000000000000.log"


def values_on_disk(cluster, broker_id: int, topic: str) -> list[bytes]:
    return [r.value for r in decode_records(segment_path(cluster, broker_id, topic).read_bytes())]


def hw_checkpoint(cluster, broker_id: int, topic: str) -> int | None:
    """The HW broker `broker_id` checkpointed for `topic`-0, read by the broker's own reader (the file ends
    with a checksum line: a hand-made parser met it whenever the file held no entry yet)."""
    path = cluster.data_dir(f"broker-{broker_id}") / HW_CHECKPOINT_FILE
    return read_offsets_checkpoint(path).get((topic, 0))


def test_scenario_1_restarted_follower_keeps_records_above_its_stale_hw(start_cluster):
    cluster = start_cluster(ClusterSpec(
        controllers=1, gateways=0, zookeeper_session_timeout_ms=SCENARIO_1_SESSION_MS,
        extra_args={"broker": ["--replica-high-watermark-checkpoint-interval-ms", "600000"]}))
    topic = "kip101a"
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {0: (1, 2)}, {"min.insync.replicas": "1"})
        wait_for_leader(cluster, zk, topic, 1, 30, followers=(2,))
        for value in (b"m1", b"m2"):
            assert produce_raw(cluster, 1, topic, batch_of([value]), acks=-1).error_code == common_pb2.ERROR_CODE_NONE
        wait_caught_up(cluster, (1, 2), topic, 2, 10)

        cluster.kill("broker-2")
        wait_for_isr(cluster, zk, topic, {1}, SCENARIO_1_SESSION_MS / 1000 + 10)
        assert hw_checkpoint(cluster, 2, topic) in (None, 0), "precondition: broker 2's HW checkpoint is stale"
        # The leader dies; before ZooKeeper notices, the follower restarts and is told to follow it.
        cluster.kill("broker-1")
        cluster.start("broker-2")
        cluster.wait_healthy(["broker-2"], 30)
        follower = wait_for(lambda: (d := describe(cluster, 2, topic)) and d.leader_epoch == 0 and not d.leader and d,
                            10, "broker 2 following broker 1")
        assert follower.log_end_offset == 2 and follower.high_watermark == 0
        # Broker 1's session expires; the partition goes offline (broker 2 is not in the ISR) and an
        # operator forces the only live replica, broker 2, to lead (an unclean election).
        wait_for(lambda: partition_state(zk, topic).leader == -1, SCENARIO_1_SESSION_MS / 1000 + 10, "offline")
        request_unclean_election(zk, topic)
        state = wait_for(lambda: (s := partition_state(zk, topic)).leader == 2 and s, 10, "broker 2 elected")
    assert state.leader_epoch >= 1
    leader = wait_for(lambda: (d := describe(cluster, 2, topic)) and d.leader and d, 30, "broker 2 leading")
    assert leader.log_end_offset == 2, "m1 and m2 survived the stale HW"
    assert values_on_disk(cluster, 2, topic) == [b"m1", b"m2"]
    assert "truncated" not in cluster.tail("broker-2", 200)

    # The old leader returns as a follower: its log is a prefix-equal copy, nothing to cut.
    cluster.start("broker-1")
    cluster.wait_healthy(["broker-1"], 30)
    with zk_session(cluster) as zk:
        wait_for_isr(cluster, zk, topic, {1, 2}, 20)
    assert values_on_disk(cluster, 1, topic) == values_on_disk(cluster, 2, topic) == [b"m1", b"m2"]


def test_scenario_2_diverged_replica_truncates_to_the_last_common_epoch(start_cluster):
    cluster = start_cluster(ClusterSpec(
        controllers=1, gateways=0, zookeeper_session_timeout_ms=SESSION_MS,
        extra_args={"broker": ["--replica-high-watermark-checkpoint-interval-ms", "200"]}))
    topic = "kip101b"
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {0: (1, 2)}, {"min.insync.replicas": "1"})
        wait_for_leader(cluster, zk, topic, 1, 30, followers=(2,))
        assert produce_raw(cluster, 1, topic, batch_of([b"m1"]), acks=-1).error_code == common_pb2.ERROR_CODE_NONE
        assert produce_raw(cluster, 1, topic, batch_of([b"m2"]), acks=-1).error_code == common_pb2.ERROR_CODE_NONE
        wait_caught_up(cluster, (1, 2), topic, 2, 10)
        wait_for(lambda: hw_checkpoint(cluster, 1, topic) == 2, 10, "broker 1's HW checkpoint to cover m2")

        # Power failure, in an order the controller sees: the leader first (2 takes over), then 2.
        cluster.kill("broker-1")
        wait_for_leader(cluster, zk, topic, 2, SESSION_MS / 1000 + 10)
        cluster.kill("broker-2")
        wait_for(lambda: partition_state(zk, topic).leader == -1, SESSION_MS / 1000 + 10, "partition offline")

        # Broker 2 lost its unflushed tail: cut its segment after m1.
        segment = segment_path(cluster, 2, topic)
        data = segment.read_bytes()
        (_, first), = [(pos, h) for pos, h in iter_batches(data) if h.base_offset == 0]
        segment.write_bytes(data[: first.size_bytes])

        cluster.start("broker-2")
        cluster.wait_healthy(["broker-2"], 30)
        # Broker 2 lost m2, which its HW checkpoint said was committed: it is no clean leader, and the
        # partition waits offline until an operator asks for an unclean election.
        wait_for(lambda: registration(zk, 2).lost_partitions == ((topic, 0),)
                 and partition_state(zk, topic).leader == -1, 20, "broker 2's loss registered, the partition offline")
        request_unclean_election(zk, topic)
        wait_for_leader(cluster, zk, topic, 2, 20)
        assert describe(cluster, 2, topic).log_end_offset == 1
        m3 = produce_raw(cluster, 2, topic, batch_of([b"m3"]), acks=1)
        assert m3.error_code == common_pb2.ERROR_CODE_NONE and m3.base_offset == 1

        # Broker 1 returns holding m2 at offset 1 and an HW (2) that covers it.
        assert values_on_disk(cluster, 1, topic) == [b"m1", b"m2"] and hw_checkpoint(cluster, 1, topic) == 2
        cluster.start("broker-1")
        cluster.wait_healthy(["broker-1"], 30)
        wait_for_isr(cluster, zk, topic, {1, 2}, 20)
    wait_caught_up(cluster, (1, 2), topic, 2, 10)
    assert values_on_disk(cluster, 1, topic) == values_on_disk(cluster, 2, topic) == [b"m1", b"m3"]
    assert "truncated from 2 to 1" in cluster.tail("broker-1", 200)
    wait_for(lambda: any('"broker.truncate"' in p.read_text() for p in cluster.trace_dir.glob("replog-broker-1.jsonl")),
             10, "broker 1's broker.truncate span")
