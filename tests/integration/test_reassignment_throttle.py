"""The reassignment throttle, end to end: a replica being added is fed no faster than
/config/reassignment_throttle allows, while the ISR clients wait for is not slowed."""

from __future__ import annotations

import time

import pytest

from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2

from .broker_helpers import batch_of, describe, produce_raw, start_cluster, zk_session  # noqa: F401 - fixture
from .controller_helpers import create_topic, wait_for

pytestmark = pytest.mark.integration

RATE = 200_000  # bytes per second
BATCHES, RECORDS, VALUE = 100, 20, 1000  # about 2 MB


def set_throttle(zk, rate: int) -> None:
    data = schema.ReassignmentThrottle(rate).encode()
    if zk.kazoo.exists(schema.REASSIGNMENT_THROTTLE):
        zk.kazoo.set(schema.REASSIGNMENT_THROTTLE, data)
    else:
        zk.kazoo.create(schema.REASSIGNMENT_THROTTLE, data)


def test_an_added_replica_catches_up_at_the_throttled_rate_until_the_throttle_is_lifted(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "moving", {0: (1, 2)})
        wait_for(lambda: (d := describe(cluster, 1, "moving")) and d.leader and len(d.isr) == 2, 30, "ISR of two")
        for b in range(BATCHES):
            batch = batch_of([bytes([b % 251]) * VALUE for _ in range(RECORDS)])
            assert produce_raw(cluster, 1, "moving", batch, acks=-1).error_code == common_pb2.ERROR_CODE_NONE
        size = describe(cluster, 1, "moving").size_bytes
        assert size > 2_000_000

        set_throttle(zk, RATE)
        wait_for(lambda: f"reassignment replication throttle: {RATE} bytes/s" in cluster.tail("broker-1", 200), 10,
                 "broker 1 to take the throttle before the reassignment starts")
        started = time.monotonic()
        zk.kazoo.create(schema.REASSIGN_PARTITIONS,
                        schema.ReassignmentRequest({("moving", 0): (1, 2, 3)}).encode())
        wait_for(lambda: (d := describe(cluster, 3, "moving")) and d.size_bytes > 0, 15, "broker 3 to start copying")

        # Clients of the ISR are not held back by the throttle.
        before = time.monotonic()
        answer = produce_raw(cluster, 1, "moving", batch_of([b"not throttled"]), acks=-1)
        assert answer.error_code == common_pb2.ERROR_CODE_NONE and time.monotonic() - before < 2

        # Past the first second's burst: at the throttled rate that takes about a second more.
        copied = wait_for(lambda: (c := describe(cluster, 3, "moving").size_bytes) >= 2 * RATE and c, 20,
                          "broker 3 to copy two seconds' worth at the throttled rate")
        elapsed = time.monotonic() - started
        # At most a second's burst, the rate since, and one batch over; and some progress.
        assert 0 < copied <= RATE * (1 + elapsed) + RECORDS * VALUE * 2, (copied, elapsed)
        assert copied < size / 2

        set_throttle(zk, 0)
        wait_for(lambda: (s := schema.TopicAssignment.decode("moving", zk.kazoo.get(schema.topic_path("moving"))[0]))
                 and s.partitions[0] == (1, 2, 3) and not s.adding_replicas, 20, "the reassignment to complete")
    assert describe(cluster, 3, "moving").size_bytes >= size
