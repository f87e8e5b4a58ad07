"""Records joined with topology (leader_traffic.py) on tiny frames whose answers are known."""

from __future__ import annotations

import pytest

from replog.spark import leader_traffic

pytestmark = pytest.mark.integration
RECORD_DDL = "key binary, value binary, topic string, partition int, headers array<struct<key: string, value: binary>>"


def test_bytes_per_partition_leader_and_per_broker(spark):
    records = spark.createDataFrame([
        (b"k", b"1234", "t", 0, [("h", b"ab")]),   # 1 + 4 + 1 + 2 = 8 bytes
        (None, b"12", "t", 0, []),                 # 2
        (None, b"123456", "t", 1, [("n", None)]),  # 6 + 1 = 7
        (None, b"1", "u", 0, []),                  # 1
    ], RECORD_DDL)
    partitions = spark.createDataFrame([("t", 0, 1), ("t", 1, 2), ("u", 0, 1), ("u", 1, 3)],
                                       "topic string, partition int, leader int")
    per_partition = {(r.topic, r.partition): (r.leader, r.records, r.bytes)
                     for r in leader_traffic.leader_traffic(records, partitions).collect()}
    assert per_partition == {("t", 0): (1, 2, 10), ("t", 1): (2, 1, 7), ("u", 0): (1, 1, 1)}
    per_broker = [(r.broker_id, r.partitions_led, r.records, r.bytes, round(r.bytes_share, 3))
                  for r in leader_traffic.broker_traffic(leader_traffic.leader_traffic(records, partitions)).collect()]
    assert per_broker == [(1, 2, 3, 11, round(11 / 18, 3)), (2, 1, 1, 7, round(7 / 18, 3))]
