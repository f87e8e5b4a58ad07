"""The Spark jobs against a real local cluster (ZooKeeper, a controller, 4 brokers, the gateway).

Brokers 1..4 sit in racks a, b, a, b; topic "orders" is created on brokers 1-3 only,
so broker 4 is empty and broker 2 holds every partition:

    orders-0 [1,2]  orders-1 [2,1]  orders-2 [3,2]  orders-3 [2,3]  orders-4 [1,2]  orders-5 [3,2]

replicas 1:3, 2:6, 3:3, 4:0 (mean 3) and preferred leaders 1:2, 2:2, 3:2, 4:0. The tests
read it live through the ``replog`` data source and through ``replog export``, report on it,
plan the rebalance onto broker 4 and run the plan through ``replog reassign execute``, then
kill a broker and read the failover back from the services' own span files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from replog.devcluster import ClusterSpec
from replog.spark import failovers, inputs, planner, report, traces
from tests.integration.controller_helpers import wait_for

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent
ASSIGNMENT = "1:2,2:1,3:2,2:3,1:2,3:2"
SESSION_TIMEOUT_MS = 3000


def replog(cluster, *args: str) -> dict:
    result = subprocess.run([str(BIN / "replog"), "--gateway", cluster.gateway_address, "-o", "json", *args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"replog {' '.join(args)}: {result.stderr}"
    return json.loads(result.stdout) if result.stdout.strip() else {}


def described(cluster, topic: str) -> dict[int, dict]:
    topics = replog(cluster, "topics", "describe", topic)["topics"]
    return {p["partition"]: p for p in topics[0]["partitions"]} if topics else {}


def fully_replicated(cluster, topic: str, count: int) -> bool:
    found = described(cluster, topic)
    return len(found) == count and all(p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"]) and
                                       not p["adding_replicas"] for p in found.values())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("spark-live"))
    cluster = factory(ClusterSpec(controllers=1, brokers=4, racks=("a", "b"),
                                  zookeeper_session_timeout_ms=SESSION_TIMEOUT_MS))
    replog(cluster, "topics", "create", "orders", "--replica-assignment", ASSIGNMENT)
    wait_for(lambda: fully_replicated(cluster, "orders", 6), 60, "orders to have leaders and full ISRs")
    yield cluster
    factory.teardown()


@pytest.fixture(scope="module")
def export_dir(cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("live-export") / "export"
    replog(cluster, "export", "--format", "parquet", "--out", str(out))
    return out


def rows(frame, *columns):
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in frame.select(*columns).collect())


def test_the_live_source_reads_what_the_export_wrote(spark, cluster, export_dir):
    live = inputs.read_gateway(spark, cluster.gateway_address)
    exported = inputs.read_export(spark, str(export_dir))
    columns = ("topic", "partition", "leader", "leader_epoch", "replicas", "isr", "preferred_leader",
               "under_replicated", "unavailable", "under_min_isr", "min_insync_replicas")
    assert rows(live.partitions, *columns) == rows(exported.partitions, *columns)
    assert len(rows(live.partitions, "topic", "partition")) == 6
    assert rows(live.brokers, "broker_id", "rack", "alive") == [(1, "a", True), (2, "b", True), (3, "a", True),
                                                                (4, "b", True)]
    assert rows(live.cluster, "controller_id", "schema_version") == rows(exported.cluster, "controller_id",
                                                                         "schema_version")
    # The documented one-liner, and a batch size that splits the partitions over several messages.
    direct = (spark.read.format("replog").option("gateway", cluster.gateway_address).option("table", "partitions")
              .option("batch_size", "4").load())
    assert direct.count() == 6 and direct.schema.simpleString().startswith("struct<topic:string,partition:int")


def test_report_on_the_real_export(spark, export_dir):
    topology = inputs.read_export(spark, str(export_dir))
    tables = report.report(topology.brokers, topology.partitions)
    brokers = {r.broker_id: (r.leaders, r.replicas) for r in tables["brokers"].collect()}
    assert brokers == {1: (2, 3), 2: (2, 6), 3: (2, 3), 4: (0, 0)}
    cluster = tables["cluster"].first()
    assert (cluster.replica_skew, cluster.leader_skew) == (2.0, pytest.approx(2 / 1.5))
    assert (cluster.rack_violations, cluster.offline, cluster.under_replicated, cluster.racks) == (0, 0, 0, 2)


def test_the_plan_runs_through_replog_reassign_execute(spark, cluster, export_dir, tmp_path):
    from replog.spark.main import build_parser

    plan = tmp_path / "plan.json"
    summary_file = tmp_path / "summary.json"
    args = build_parser().parse_args(["plan", "--export", str(export_dir), "--out", str(plan),
                                      "--summary-out", str(summary_file)])
    assert planner.run(spark, args) == 0
    summary = json.loads(summary_file.read_text())["summary"]
    # Broker 2 must shed 3 replicas, and only to broker 4 (the other rack-b broker).
    assert summary["moves_lower_bound"] == 3 and summary["replicas_moved"] == 3
    replog(cluster, "reassign", "execute", "--reassignment-json-file", str(plan))
    wait_for(lambda: replog(cluster, "reassign", "verify", "--reassignment-json-file", str(plan)).get("complete"),
             90, "the planned reassignment to complete")
    wait_for(lambda: fully_replicated(cluster, "orders", 6), 60, "orders to be fully replicated again")
    after = described(cluster, "orders")
    replicas = Counter(b for p in after.values() for b in p["replicas"])
    preferred = Counter(p["replicas"][0] for p in after.values())
    assert replicas == {1: 3, 2: 3, 3: 3, 4: 3}
    assert all(abs(count - 1.5) < 1 for count in preferred.values()) and set(preferred) == {1, 2, 3, 4}
    racks = {1: "a", 2: "b", 3: "a", 4: "b"}
    assert all({racks[b] for b in p["replicas"]} == {"a", "b"} for p in after.values())


def test_a_killed_broker_shows_up_in_the_failover_report(spark, cluster, tmp_path):
    """The services' own span files: a broker dies, the controller's broker_change trace is read back."""
    victim = 4
    died_at_ms = int(time.time() * 1000)
    cluster.kill(f"broker-{victim}")
    trace_dir = str(cluster.trace_dir)

    def failover_rows():
        spans = traces.read_spans(spark, [trace_dir])
        return [r for r in failovers.failover_table(spans).collect()
                if r.kind == "broker_failure" and victim in r.brokers_dead]

    # Polled once a second: the services export spans in batches every 500 ms.
    found = wait_for(failover_rows, 60, "a broker_failure trace naming the killed broker", interval_s=1.0)
    row = found[-1]
    assert row.detection_source == "inferred" and row.detection_ms == SESSION_TIMEOUT_MS
    assert row.decide_ms is not None and row.zookeeper_write_ms is not None and row.handling_ms > 0
    deaths = tmp_path / "deaths.csv"
    deaths.write_text(f"role,id,died_at_ms\nbroker,{victim},{died_at_ms}\n")
    measured = [r for r in failovers.failover_table(traces.read_spans(spark, [trace_dir]),
                                                    failovers.read_deaths(spark, str(deaths))).collect()
                if r.kind == "broker_failure" and victim in r.brokers_dead][-1]
    # ZooKeeper expires the session after about the session timeout (never much before it).
    assert measured.detection_source == "measured"
    assert SESSION_TIMEOUT_MS * 0.5 < measured.detection_ms < SESSION_TIMEOUT_MS * 4
