"""A client not written in Python (grpcurl, a Go binary) uses the gateway through server
reflection alone: creates a topic, describes it, reads the ExportTopology stream, and
gets a refusal with its status and message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replog.common.export_schema import SCHEMA_VERSION
from replog.devcluster import ClusterSpec

from .gateway_helpers import running_cluster
from .tls_helpers import grpcurl_flags

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("gateway-grpcurl"),
                               ClusterSpec(controllers=0, brokers=3, gateways=1))


def grpcurl(cluster, method: str, request: dict) -> subprocess.CompletedProcess:
    binary = Path(sys.executable).parent / "grpcurl"
    return subprocess.run(
        [str(binary), *grpcurl_flags(cluster.operator_tls), "-d", json.dumps(request), cluster.gateway_address,
         f"replog.v1.AdminService/{method}"],
        capture_output=True, text=True, timeout=30,
    )


def json_stream(text: str) -> list[dict]:
    """grpcurl prints a server stream as JSON objects one after another (proto field names)."""
    decoder, objects, position = json.JSONDecoder(), [], 0
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        value, position = decoder.raw_decode(text, position)
        objects.append(value)
    return objects


def test_grpcurl_creates_describes_and_exports(cluster):
    created = grpcurl(cluster, "CreateTopic", {"name": "polyglot", "partitions": 3, "replicationFactor": 2,
                                               "configs": {"min.insync.replicas": "2"}})
    assert created.returncode == 0, created.stderr
    assignment = json.loads(created.stdout)["assignment"]
    assert [a.get("partition", 0) for a in assignment] == [0, 1, 2]
    assert all(len(a["replicas"]) == 2 for a in assignment)

    described = grpcurl(cluster, "DescribeTopics", {"names": ["polyglot"]})
    assert described.returncode == 0, described.stderr
    topic = json.loads(described.stdout)["topics"][0]
    assert topic["name"] == "polyglot" and topic["configs"]["min.insync.replicas"] == "2"
    assert [p.get("partition", 0) for p in topic["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == -1 and p["unavailable"] for p in topic["partitions"])   # no controller here

    exported = grpcurl(cluster, "ExportTopology", {"partitionBatchSize": 1})
    assert exported.returncode == 0, exported.stderr
    rows = json_stream(exported.stdout)
    assert [next(iter(r)) for r in rows] == ["cluster"] + ["broker"] * 3 + ["partition"] * 3
    assert rows[0]["cluster"]["schema_version"] == SCHEMA_VERSION
    assert [r["broker"]["broker_id"] for r in rows[1:4]] == [1, 2, 3]
    assert {r["partition"]["topic"] for r in rows[4:]} == {"polyglot"}
    assert rows[4]["partition"]["min_insync_replicas"] == 2


def test_grpcurl_sees_a_refusal_with_status_and_message(cluster):
    refused = grpcurl(cluster, "CreateTopic", {"name": "no/slashes", "partitions": 1, "replicationFactor": 1})
    assert refused.returncode != 0
    assert "InvalidArgument" in refused.stderr and "Topic name 'no/slashes' is illegal" in refused.stderr
