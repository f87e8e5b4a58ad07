"""The replog data source's conversion of ExportTopology responses into Arrow batches (no Spark, no gRPC)."""

from __future__ import annotations

import pytest

from replog.spark import schema
from replog.spark.source import arrow_batches
from replog.v1 import admin_pb2 as A


def stream(version: int = schema.SCHEMA_VERSION):
    yield A.ExportTopologyResponse(cluster=A.ClusterRow(controller_id=1, controller_epoch=3, exported_at_ms=5,
                                                         schema_version=version))
    yield A.ExportTopologyResponse(broker=A.BrokerRow(broker_id=1, host="h", port=9, rack="a", alive=True))
    yield A.ExportTopologyResponse(broker=A.BrokerRow(broker_id=2, alive=False))   # named, not registered
    rows = [A.PartitionRow(topic="t", partition=p, leader=1, replicas=[1, 2], isr=[1], preferred_leader=1,
                           under_replicated=True, size_bytes=-1, min_insync_replicas=1) for p in range(3)]
    yield A.ExportTopologyResponse(partition_batch=A.PartitionRowBatch(rows=rows[:2]))
    yield A.ExportTopologyResponse(partition=rows[2])
    yield A.ExportTopologyResponse(group=A.GroupRow(group="billing", state="Stable", generation=4, members=2,
                                                    coordinator=1))
    yield A.ExportTopologyResponse(group_offset=A.GroupOffsetRow(group="billing", topic="t", partition=0,
                                                                 committed_offset=7, log_end_offset=10, lag=3))


def test_each_table_has_the_schema_of_an_export_file():
    for table in schema.TABLE_NAMES:
        batches = list(arrow_batches(stream(), table, "gw"))
        assert [f.name for f in batches[0].schema] == list(schema.TABLES[table])
    partitions = [row for b in arrow_batches(stream(), "partitions", "gw") for row in b.to_pylist()]
    assert [(r["partition"], r["replicas"], r["isr"], r["under_replicated"]) for r in partitions] == [
        (0, [1, 2], [1], True), (1, [1, 2], [1], True), (2, [1, 2], [1], True)]
    brokers = [row for b in arrow_batches(stream(), "brokers", "gw") for row in b.to_pylist()]
    assert brokers[1] == {"broker_id": 2, "host": None, "port": None, "rack": None, "alive": False,
                          "controller": False}
    groups = [row for b in arrow_batches(stream(), "groups", "gw") for row in b.to_pylist()]
    assert groups == [{"group": "billing", "state": "Stable", "generation": 4, "members": 2, "coordinator": 1}]
    offsets = [row for b in arrow_batches(stream(), "group_offsets", "gw") for row in b.to_pylist()]
    assert offsets == [{"group": "billing", "topic": "t", "partition": 0, "committed_offset": 7,
                        "log_end_offset": 10, "lag": 3}]
    (cluster,) = [row for b in arrow_batches(stream(), "cluster", "gw") for row in b.to_pylist()]
    assert cluster == {"controller_id": 1, "controller_epoch": 3, "exported_at_ms": 5,
                       "schema_version": schema.SCHEMA_VERSION}


def test_an_unknown_schema_version_is_refused_in_one_line():
    with pytest.raises(schema.ExportError) as exc:
        list(arrow_batches(stream(version=schema.SCHEMA_VERSION + 1), "partitions", "127.0.0.1:9090"))
    assert str(exc.value) == (f"127.0.0.1:9090: schema version {schema.SCHEMA_VERSION + 1} is not supported "
                              f"(this replog-spark reads version {schema.SCHEMA_VERSION})")


def test_an_empty_stream_is_refused():
    with pytest.raises(schema.ExportError, match="the export stream was empty"):
        list(arrow_batches(iter(()), "partitions", "gw"))
