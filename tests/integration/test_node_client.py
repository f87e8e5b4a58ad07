"""A client in another language, written from docs/record-format.md and the protos (issue 59): the Node.js
example in examples/node/ (npm's @grpc/grpc-js and @grpc/proto-loader; `make setup` installs its modules
with `npm ci`). Over mutual TLS, 10,000 records it produces (idempotent, zstd, with headers) are read by
the Python Consumer, and 10,000 the Python Producer sends (gzip, with headers) are read by it, with
identical keys, values, headers and timestamps."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec
from replog.common.security import local

from .gateway_helpers import cli_runner

pytestmark = pytest.mark.integration

NODE_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node"
RECORDS = 10_000
PARTITIONS = 3
T0_MS = 1_700_000_000_000
NODE_TIMEOUT_S = 240


def node() -> str:
    found = shutil.which("node")
    assert found, "Node.js is not installed: `make setup` installs it (deploy/local/scripts/install-system-deps.sh)"
    assert (NODE_EXAMPLE / "node_modules" / "@grpc" / "grpc-js").is_dir(), \
        "examples/node has no node_modules: `make setup` runs npm ci there"
    return found


def run_node(*args: str) -> None:
    env = {**os.environ}
    assert env.get(local.ENV_CA) and env.get(local.ENV_CERT), "the session's operator certificate is not in the env"
    done = subprocess.run([node(), *args], cwd=NODE_EXAMPLE, env=env, capture_output=True, text=True,
                          timeout=NODE_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr


def lines(path: Path) -> list[tuple]:
    """(partition, offset, key, value, headers, timestamp_ms) of each record a .jsonl file holds, sorted."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out.append((r["partition"], int(r["offset"]), None if r["key"] is None else base64.b64decode(r["key"]),
                    base64.b64decode(r["value"]),
                    tuple((k, None if v is None else base64.b64decode(v)) for k, v in r["headers"]),
                    int(r["timestamp_ms"])))
    return sorted(out)


def test_the_node_encoder_matches_the_documented_test_vectors():
    done = subprocess.run([node(), "--test", "test/"], cwd=NODE_EXAMPLE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("node-client"))
    cluster = factory(ClusterSpec(controllers=1, brokers=3, gateways=1))
    yield cluster
    factory.teardown()


def bootstrap(cluster) -> str:
    return ",".join(p.address for p in cluster.of_role("broker"))


def test_records_node_produces_are_what_python_reads(cluster, tmp_path):
    sent = tmp_path / "sent.jsonl"
    run_node("roundtrip.js", "produce", "--gateway", cluster.gateway_address, "--bootstrap", bootstrap(cluster),
             "--topic", "from-node", "--partitions", str(PARTITIONS), "--count", str(RECORDS),
             "--compression", "zstd", "--out", str(sent))
    expected = lines(sent)
    assert len(expected) == RECORDS and any(r[4] for r in expected)
    read = []
    with Consumer(bootstrap(cluster), "from-node", iteration_timeout_ms=30_000) as consumer:
        for r in consumer:
            read.append((r.partition, r.offset, r.key, r.value, r.headers, r.timestamp_ms))
            if len(read) == RECORDS:
                break
    assert sorted(read) == expected


def test_records_python_produces_are_what_node_reads(cluster, capsys, tmp_path):
    code, _, err = cli_runner(cluster, capsys)("topics", "create", "from-python", "--partitions", str(PARTITIONS),
                                               "--replication-factor", "3")
    assert code == 0, err
    sent = []
    with Producer(bootstrap(cluster), compression_type="gzip") as producer:
        for i in range(RECORDS):
            key = None if i % 10 == 0 else b"account-%d" % (i % 53)
            headers = (("origin", b"python"), ("n", b"%d" % i)) + ((("null", None),) if i % 5 == 0 else ())
            value = json.dumps({"id": i, "event": "payment", "cents": i * 3 % 997}).encode()
            handle = producer.send("from-python", value, key=key, headers=headers, timestamp_ms=T0_MS + i,
                                   partition=i % PARTITIONS)
            sent.append((handle, key, value, headers, T0_MS + i))
        producer.flush(60)
    expected = sorted((h.result().partition, h.result().offset, key, value, headers, stamp)
                      for h, key, value, headers, stamp in sent)
    read = tmp_path / "read.jsonl"
    run_node("roundtrip.js", "consume", "--bootstrap", bootstrap(cluster), "--topic", "from-python",
             "--count", str(RECORDS), "--out", str(read))
    assert lines(read) == expected
