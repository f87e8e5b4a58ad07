"""Replica directory names."""

from __future__ import annotations

import pytest

from replog.broker.logdirs.partition_dirs import (
    IllegalPartitionName,
    parse_partition_directory,
    partition_directory,
    set_aside_directory,
)
from replog.common.core.partitions import TopicPartition


def test_partition_directory_names():
    assert parse_partition_directory("orders-12") == TopicPartition("orders", 12)
    assert parse_partition_directory("my-topic-3") == TopicPartition("my-topic", 3)
    assert parse_partition_directory("replication-offset-checkpoint") is None
    assert parse_partition_directory("-3") is None


def test_a_partition_directory_is_always_one_name_inside_its_log_directory(tmp_path):
    assert partition_directory(tmp_path, TopicPartition("orders", 3)) == tmp_path / "orders-3"
    for topic, partition in (("../../x", 0), ("a/b", 0), ("..", 0), ("", 0), ("x" * 250, 0), ("orders", -1)):
        with pytest.raises(IllegalPartitionName):
            partition_directory(tmp_path, TopicPartition(topic, partition))


def test_the_set_aside_name_of_the_longest_legal_directory_fits_a_file_name(tmp_path):
    directory = partition_directory(tmp_path, TopicPartition("t" * 249, 99_999))
    aside = set_aside_directory(directory)
    assert len(aside.name) <= 255 and aside.parent == tmp_path
    assert aside.name.endswith("-delete") and parse_partition_directory(aside.name) is None
    assert set_aside_directory(tmp_path / "orders-3").name.startswith("orders-3.")
