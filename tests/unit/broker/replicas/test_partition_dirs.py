"""Replica directory names."""

from __future__ import annotations

from replog.broker.replicas.partition_dirs import parse_partition_directory
from replog.common.core.partitions import TopicPartition


def test_partition_directory_names():
    assert parse_partition_directory("orders-12") == TopicPartition("orders", 12)
    assert parse_partition_directory("my-topic-3") == TopicPartition("my-topic", 3)
    assert parse_partition_directory("replication-offset-checkpoint") is None
    assert parse_partition_directory("-3") is None
