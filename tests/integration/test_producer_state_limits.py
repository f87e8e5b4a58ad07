"""Idempotent producer state on a real broker: a full partition refuses a new producer and evicts
no one, so a known producer's retried first batch is answered with its first offset, also after a
restart (the state is rebuilt from the log); a full partition forgets producers idle for a day, by
their batches' time, to make room.
"""

from __future__ import annotations

import time

import pytest

from replog.common.records import encode_batch
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2

from .broker_helpers import create_topic, produce_raw, wait_for, wait_for_leader, zk_session

pytestmark = pytest.mark.integration

DAY_MS = 24 * 60 * 60 * 1000
E = common_pb2


def first_batch(producer_id: int, value: bytes, timestamp_ms: int | None = None) -> bytes:
    at_ms = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    return encode_batch([(None, value, at_ms)], producer_id=producer_id, producer_epoch=0, base_sequence=0)


def test_a_full_partition_refuses_new_producers_and_answers_retries_of_known_ones(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=0, extra_args={"broker": [
        "--producer-ids-max", "2", "--producer-id-expiration-check-interval-ms", "500"]}))
    try:
        with zk_session(cluster) as zk:
            create_topic(zk, "full", {0: (1,)})
            create_topic(zk, "idle", {0: (1,)})
            wait_for_leader(cluster, zk, "full", 1, 30)
            wait_for_leader(cluster, zk, "idle", 1, 30)

            assert produce_raw(cluster, 1, "full", first_batch(11, b"a")).base_offset == 0
            assert produce_raw(cluster, 1, "full", first_batch(12, b"b")).base_offset == 1
            third = produce_raw(cluster, 1, "full", first_batch(13, b"c"))
            assert third.error_code == E.ERROR_CODE_PRODUCER_STATE_FULL and "producer_ids_max 2" in third.error_message
            wait_for(lambda: "refused the first batch of 1 new idempotent producer(s)" in cluster.tail("broker-1", 100),
                     15, "the refusal in the broker's log")
            # Producer 11 never saw its answer and retries: its first offset, not a second copy.
            retry = produce_raw(cluster, 1, "full", first_batch(11, b"a"))
            assert retry.error_code == E.ERROR_CODE_NONE and retry.base_offset == 0

            cluster.restart("broker-1")
            wait_for_leader(cluster, zk, "full", 1, 30)
            retry = produce_raw(cluster, 1, "full", first_batch(11, b"a"))
            assert retry.error_code == E.ERROR_CODE_NONE and retry.base_offset == 0, "rebuilt from the log"
            assert produce_raw(cluster, 1, "full", first_batch(13, b"c")).error_code == E.ERROR_CODE_PRODUCER_STATE_FULL

            # Two producers whose last batches are more than a day old fill the partition: the refusal of a
            # third has them forgotten at once, and its retry is taken.
            wait_for_leader(cluster, zk, "idle", 1, 30)
            long_ago_ms = int(time.time() * 1000) - DAY_MS - 60_000
            for producer_id, value in ((21, b"x"), (22, b"y")):
                answer = produce_raw(cluster, 1, "idle", first_batch(producer_id, value, long_ago_ms))
                assert answer.error_code == E.ERROR_CODE_NONE
            wait_for(lambda: produce_raw(cluster, 1, "idle", first_batch(23, b"z")).error_code == E.ERROR_CODE_NONE,
                     15, "room for a new producer once the idle ones expired")
            assert "idempotent producer(s) idle for producer_id_expiration_ms" in cluster.tail("broker-1", 200)
    finally:
        cluster.discard()
