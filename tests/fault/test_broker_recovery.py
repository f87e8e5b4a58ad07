"""Start-up recovery with real processes and damaged segment files.

- A torn write (the segment cut mid-batch while the broker was stopped) is cut
  back to the last whole batch at start-up; the broker logs how many bytes it
  dropped and serves everything before it. Its only replica lost committed
  records, so the partition stays offline until the operator allows an unclean
  election for the topic.
- A corrupted byte in the middle of a follower's segment is detected at start-up
  (CRC mismatch, reported with the bytes dropped); the follower then fetches the
  lost records again from the leader and ends byte-identical to it.
"""

from __future__ import annotations

import json

import pytest

from replog.common.records import iter_batches
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2

from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    batch_of,
    create_topic,
    describe,
    partition_state,
    produce_raw,
    start_cluster,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BATCHES = 5
RECORDS_PER_BATCH = 10


def segment_path(cluster, broker_id: int, topic: str):
    return cluster.data_dir(f"broker-{broker_id}") / f"{topic}-0" / "00000000000000000000.log"


def produce_batches(cluster, broker_id: int, topic: str, acks: int) -> None:
    for b in range(BATCHES):
        values = [f"b{b}-r{r}".encode() for r in range(RECORDS_PER_BATCH)]
        answer = produce_raw(cluster, broker_id, topic, batch_of(values), acks=acks)
        assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer


def recovery_warnings(cluster, name: str) -> list[dict]:
    lines = cluster.log_path(name).read_text().splitlines()
    found = []
    for line in lines:
        if line.startswith("{") and "start-up recovery dropped" in line:
            found.append(json.loads(line))
    return found


def test_torn_write_at_the_end_of_a_segment_is_cut_at_start_up(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "torn", {0: (1,)})
        wait_for_leader(cluster, zk, "torn", 1, 30)
        produce_batches(cluster, 1, "torn", acks=1)
        cluster.stop("broker-1")
        segment = segment_path(cluster, 1, "torn")
        size = segment.stat().st_size
        with open(segment, "r+b") as f:
            f.truncate(size - 7)  # the last batch loses its tail: a write torn by a crash
        cluster.start("broker-1")
        cluster.wait_healthy(["broker-1"], 30)
        # Its only replica lost the torn batch, which was committed: no clean leader until the operator says so.
        wait_for(lambda: partition_state(zk, "torn").leader == -1, 30, "torn-0 offline")
        zk.kazoo.set(schema.topic_config_path("torn"),
                     schema.TopicConfigRecord({"unclean.leader.election.enable": "true"}).encode())
        wait_for_leader(cluster, zk, "torn", 1, 30)
        assert partition_state(zk, "torn").unclean_leader_epoch == partition_state(zk, "torn").leader_epoch
    recovered = describe(cluster, 1, "torn")
    kept = (BATCHES - 1) * RECORDS_PER_BATCH
    assert recovered.log_end_offset == kept and recovered.high_watermark == kept
    (warning,) = recovery_warnings(cluster, "broker-1")
    last_batch_bytes = size - sum(h.size_bytes for _, h in iter_batches(segment.read_bytes()))
    assert f"dropped {last_batch_bytes - 7} bytes" in warning["msg"]
    # Everything before the torn batch is served, and the log takes new records after it.
    answer = produce_raw(cluster, 1, "torn", batch_of([b"after"]), acks=1)
    assert answer.error_code == common_pb2.ERROR_CODE_NONE and answer.base_offset == kept


def test_corrupted_byte_in_a_follower_segment_is_detected_and_refetched(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "rot", {0: (1, 2)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "rot", 1, 30, followers=(2,))
        wait_for_isr(cluster, zk, "rot", {1, 2}, 30)
        produce_batches(cluster, 1, "rot", acks=-1)
        total = BATCHES * RECORDS_PER_BATCH
        wait_caught_up(cluster, (1, 2), "rot", total, 10)
        cluster.stop("broker-2")
        segment = segment_path(cluster, 2, "rot")
        data = bytearray(segment.read_bytes())
        batches = list(iter_batches(bytes(data)))
        position, header = batches[2]  # the third of five batches: the middle of the segment
        data[position + header.size_bytes - 3] ^= 0xFF  # inside a record value, covered by the CRC
        segment.write_bytes(bytes(data))
        cluster.start("broker-2")
        cluster.wait_healthy(["broker-2"], 30)
        (warning,) = wait_for(lambda: recovery_warnings(cluster, "broker-2"), 30, "the recovery report")
        assert "CRC" in warning["msg"]
        assert f"dropped {len(data) - position} bytes" in warning["msg"]
        wait_for_isr(cluster, zk, "rot", {1, 2}, 60)
    wait_caught_up(cluster, (1, 2), "rot", total, 30)
    assert segment_path(cluster, 2, "rot").read_bytes() == segment_path(cluster, 1, "rot").read_bytes()


def test_replica_of_a_topic_deleted_while_the_broker_was_down_is_removed_at_start_up(start_cluster):
    from replog.common.zk import schema

    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "gone", {0: (1, 2, 3)})
        wait_for_leader(cluster, zk, "gone", 1, 30)
        produce_batches(cluster, 1, "gone", acks=-1)
        directory = segment_path(cluster, 3, "gone").parent
        assert directory.exists()
        cluster.stop("broker-3")
        zk.kazoo.create(schema.delete_topic_path("gone"))
        wait_for(lambda: zk.get(schema.topic_path("gone")) is None, 30, "the topic's deletion")
        assert directory.exists(), "broker 3 was down and kept its replica"
        cluster.start("broker-3")
        cluster.wait_healthy(["broker-3"], 30)
    wait_for(lambda: not directory.exists(), 10, "broker 3 to delete its stale replica")
    assert not segment_path(cluster, 1, "gone").parent.exists()
    assert "not assigned to broker 3 any more" in cluster.tail("broker-3", 50)
