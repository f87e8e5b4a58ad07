"""An acks=all write waiting for its followers survives a leader epoch raised under the same leader.

A reassignment raises the partition's leader epoch while its leader stays. A write waiting for the
HW at that moment used to be answered NOT_LEADER although it was in the log, so a producer without
idempotence sent it again and it was written twice. Here the write waits (its follower is paused),
the reassignment starts, and the write is answered NONE at its offset once the new ISR holds it; the
log holds it once.
"""

from __future__ import annotations

import signal
import threading

import pytest

from replog.common import records
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    describe,
    log_stub,
    produce_raw,
    wait_for,
    wait_for_isr,
    zk_session,
)

pytestmark = pytest.mark.fault

LAG_MS = 3000
TOPIC = "bumped"


def test_a_waiting_acks_all_write_is_acknowledged_across_a_same_leader_epoch_bump(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, gateways=0,
                                          extra_args={"broker": ["--replica-lag-time-max-ms", str(LAG_MS)]}))
    try:
        with zk_session(cluster) as zk:
            create_topic(zk, TOPIC, {0: (1, 2)}, {"min.insync.replicas": "2"})
            wait_for_isr(cluster, zk, TOPIC, {1, 2}, 30)
            assert produce_raw(cluster, 1, TOPIC, batch_of([b"first"])).error_code == common_pb2.ERROR_CODE_NONE
            before = describe(cluster, 1, TOPIC)

            cluster.signal("broker-2", signal.SIGSTOP)  # the write below cannot be replicated yet
            answers: list[log_pb2.ProducePartitionResponse] = []
            writer = threading.Thread(target=lambda: answers.append(
                produce_raw(cluster, 1, TOPIC, batch_of([b"waiting"]), timeout_ms=60_000)), daemon=True)
            writer.start()
            wait_for(lambda: describe(cluster, 1, TOPIC).log_end_offset == 2, 10, "the write to be in the log")

            zk.kazoo.create(schema.REASSIGN_PARTITIONS, schema.ReassignmentRequest({(TOPIC, 0): (1, 2, 3)}).encode())
            wait_for(lambda: describe(cluster, 1, TOPIC).leader_epoch > before.leader_epoch, 15,
                     "broker 1 to lead at a newer leader epoch")
            assert describe(cluster, 1, TOPIC).leader, "the same leader"
            cluster.signal("broker-2", signal.SIGCONT)

            writer.join(timeout=70)
            assert answers, "the write was not answered"
            assert answers[0].error_code == common_pb2.ERROR_CODE_NONE, answers[0]
            assert answers[0].base_offset == 1
            fetched = log_stub(cluster, 1).Fetch(log_pb2.FetchRequest(
                max_wait_ms=0, max_bytes=1 << 20, partitions=[log_pb2.FetchPartition(
                    topic=TOPIC, partition=0, fetch_offset=0, current_leader_epoch=-1)]), timeout=10)
            values = [r.value for r in records.decode_records(fetched.partitions[0].records)]
            assert values == [b"first", b"waiting"]
    finally:
        cluster.signal("broker-2", signal.SIGCONT)
        cluster.discard()
