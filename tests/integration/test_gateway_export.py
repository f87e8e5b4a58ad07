"""ExportTopology end to end: the stream's order and batching, the Parquet and NDJSON
files read back with pyarrow against the documented schema, and a partition whose
leader's broker died showing as unavailable.

No controller runs (ClusterSpec(controllers=0)): the test writes the partition states
as the controller would, then stops a broker; with no controller to move leadership,
the partitions it led stay with a dead leader, which is what the export must show.
"""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from replog.cli.main import main
from replog.common import export_schema
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2 as A
from replog.v1 import admin_pb2_grpc

from .gateway_helpers import running_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("gateway-export"),
                               ClusterSpec(controllers=0, brokers=3, gateways=1))


@pytest.fixture(scope="module")
def topology(cluster):
    """alpha: RF 3, min ISR 2, healthy; beta: RF 1. Then broker 3 dies: alpha-2 and beta-1 lose their leader."""
    client = KazooClient(**cluster.zookeeper_endpoint.kazoo_args())
    client.start()
    try:
        with cluster.channel(cluster.gateway_address) as channel:
            admin = admin_pb2_grpc.AdminServiceStub(channel)
            admin.CreateTopic(A.CreateTopicRequest(name="alpha", configs={"min.insync.replicas": "2"}, assignment=[
                A.ReplicaAssignment(partition=p, replicas=r) for p, r in enumerate([[1, 2, 3], [2, 3, 1], [3, 1, 2]])]))
            admin.CreateTopic(A.CreateTopicRequest(name="beta", assignment=[
                A.ReplicaAssignment(partition=0, replicas=[1]), A.ReplicaAssignment(partition=1, replicas=[3])]))
        states = {("alpha", 0): (1, [1, 2, 3]), ("alpha", 1): (2, [2, 3, 1]), ("alpha", 2): (3, [3, 1, 2]),
                  ("beta", 0): (1, [1]), ("beta", 1): (3, [3])}
        for (topic, partition), (leader, isr) in states.items():   # playing the controller
            client.create(schema.partition_state_path(topic, partition), schema.PartitionStateRecord(
                leader=leader, leader_epoch=5, isr=tuple(isr), controller_epoch=1).encode(), makepath=True)
        cluster.stop("broker-3")
        deadline = time.monotonic() + 10
        while client.exists(schema.broker_path(3)):
            assert time.monotonic() < deadline, "broker 3 stayed registered"
            time.sleep(0.05)
    finally:
        client.stop()
        client.close()
    return cluster


def stream(cluster, **request) -> list:
    with cluster.channel(cluster.gateway_address) as channel:
        return list(admin_pb2_grpc.AdminServiceStub(channel).ExportTopology(
            A.ExportTopologyRequest(**request), timeout=30))


def test_stream_order_rows_and_batches(topology):
    rows = stream(topology)
    kinds = [r.WhichOneof("row") for r in rows]
    assert kinds == ["cluster"] + ["broker"] * 3 + ["partition"] * 5
    cluster_row = rows[0].cluster
    assert (cluster_row.schema_version, cluster_row.controller_id) == (export_schema.SCHEMA_VERSION, -1)
    assert abs(cluster_row.exported_at_ms - time.time() * 1000) < 60_000
    brokers = [r.broker for r in rows[1:4]]
    assert [(b.broker_id, b.alive, b.rack) for b in brokers] == [(1, True, "a"), (2, True, "b"), (3, False, "")]
    assert brokers[2].host == "" and brokers[2].port == 0      # named in assignments, no longer registered
    partitions = {(r.partition.topic, r.partition.partition): r.partition for r in rows[4:]}
    assert list(partitions) == [("alpha", 0), ("alpha", 1), ("alpha", 2), ("beta", 0), ("beta", 1)]
    alpha2 = partitions[("alpha", 2)]
    assert (alpha2.leader, alpha2.leader_epoch, list(alpha2.replicas), alpha2.preferred_leader) == (3, 5, [3, 1, 2], 3)
    assert alpha2.unavailable and not alpha2.under_replicated and alpha2.min_insync_replicas == 2
    assert not partitions[("alpha", 0)].unavailable and partitions[("beta", 1)].unavailable
    assert {(p.log_end_offset, p.high_watermark, p.size_bytes) for p in partitions.values()} == {(-1, -1, -1)}

    batched = stream(topology, partition_batch_size=2)
    assert [r.WhichOneof("row") for r in batched] == ["cluster"] + ["broker"] * 3 + ["partition_batch"] * 3
    assert [len(r.partition_batch.rows) for r in batched[4:]] == [2, 2, 1]
    assert [row for r in batched[4:] for row in r.partition_batch.rows] == [r.partition for r in rows[4:]]


def test_log_stats_are_asked_for_and_unknown_stays_minus_one(topology):
    rows = stream(topology, include_log_stats=True, partition_batch_size=100)
    stats = [(p.log_end_offset, p.high_watermark, p.size_bytes) for r in rows[4:] for p in r.partition_batch.rows]
    # Brokers that cannot tell (dead, or not hosting the replica yet) leave -1; never an error.
    assert len(stats) == 5 and all(v >= -1 for triple in stats for v in triple)


def run_export(cluster, capsys, *argv) -> dict:
    code = main(["--gateway", cluster.gateway_address, "--output", "json", "export", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_parquet_export_reads_back_with_the_documented_schema(topology, capsys, tmp_path):
    report = run_export(topology, capsys, "--format", "parquet", "--out", str(tmp_path), "--batch-size", "2")
    assert report["schema_version"] == export_schema.SCHEMA_VERSION
    assert {t: v["rows"] for t, v in report["tables"].items()} == {"cluster": 1, "brokers": 3, "partitions": 5,
                                                                  "groups": 0, "group_offsets": 0}  # not asked
    assert json.loads((tmp_path / "_manifest.json").read_text())["tables"]["partitions"]["file"] == "partitions.parquet"
    tables = {name: pq.read_table(tmp_path / f"{name}.parquet") for name in export_schema.TABLES}
    for name, table in tables.items():
        expected = export_schema.arrow_schema(name)
        assert table.schema.equals(expected, check_metadata=False), (name, table.schema)
        assert table.schema.metadata[b"replog.schema_version"] == str(export_schema.SCHEMA_VERSION).encode()
    assert tables["cluster"].to_pylist()[0]["schema_version"] == export_schema.SCHEMA_VERSION
    brokers = {b["broker_id"]: b for b in tables["brokers"].to_pylist()}
    assert brokers[3] == {"broker_id": 3, "host": None, "port": None, "rack": None, "alive": False,
                          "controller": False}
    assert brokers[1]["host"] == "127.0.0.1" and brokers[1]["alive"] and brokers[1]["rack"] == "a"
    partitions = tables["partitions"].to_pylist()
    unavailable = sorted((p["topic"], p["partition"]) for p in partitions if p["unavailable"])
    assert unavailable == [("alpha", 2), ("beta", 1)]
    assert next(p for p in partitions if (p["topic"], p["partition"]) == ("alpha", 1)) == {
        "topic": "alpha", "partition": 1, "leader": 2, "leader_epoch": 5, "replicas": [2, 3, 1], "isr": [2, 3, 1],
        "preferred_leader": 2, "under_replicated": False, "unavailable": False, "under_min_isr": False,
        "min_insync_replicas": 2, "log_end_offset": -1, "high_watermark": -1, "size_bytes": -1,
        "log_start_offset": -1, "elr": [],
    }


def test_ndjson_export_holds_the_same_rows(topology, capsys, tmp_path):
    run_export(topology, capsys, "--format", "parquet", "--out", str(tmp_path / "p"))
    run_export(topology, capsys, "--format", "ndjson", "--out", str(tmp_path / "j"))
    for name, columns in export_schema.TABLES.items():
        lines = (tmp_path / "j" / f"{name}.ndjson").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert all(list(row) == [c.name for c in columns] for row in rows)
        from_parquet = pq.read_table(tmp_path / "p" / f"{name}.parquet").to_pylist()
        if name == "cluster":   # two exports, two times
            for row in rows + from_parquet:
                row.pop("exported_at_ms")
        assert rows == from_parquet


def test_export_to_an_unwritable_place_is_one_line(topology, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["--gateway", topology.gateway_address, "export", "--out", str(blocker / "sub")])
    _, err = capsys.readouterr()
    assert code == 1 and err.startswith("replog: error: cannot write the export to") and err.count("\n") == 1
