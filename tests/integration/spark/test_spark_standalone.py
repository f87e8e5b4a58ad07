"""The jobs on a real Spark cluster: a standalone master and two workers as separate processes.

A replog cluster (ZooKeeper, a controller, 3 brokers, the gateway) holds topic "served" with
records of known sizes. Through ``spark-submit --master spark://...`` the topology report (live,
through the gateway's source, which runs in the executors), the planner and the records job
(records joined with topology) run on the workers' executors. The master, the workers and their
executors are stopped at the end, also when a test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replog.client import Producer
from replog.devcluster import ClusterSpec
from tests.integration.broker_helpers import wait_for_isr, zk_session
from tests.integration.controller_helpers import create_topic, wait_for

from .standalone import Standalone, all_gone

# Each spark-submit starts a driver JVM and an executor JVM per worker: minutes on a busy 2-core machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
BIN = Path(sys.executable).parent
JOBS_DIR = Path(__file__).resolve().parents[3] / "spark" / "src" / "replog" / "spark"
PARTITIONS = 6
RECORDS_PER_PARTITION = 50
VALUE_BYTES = 100


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("spark-standalone-replog"))
    cluster = factory(ClusterSpec(controllers=1, brokers=3))
    with zk_session(cluster) as zk:
        create_topic(zk, "served", {p: ((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(PARTITIONS)},
                     {"min.insync.replicas": "1"})
        for p in range(PARTITIONS):
            wait_for_isr(cluster, zk, "served", {(p % 3) + 1, ((p + 1) % 3) + 1}, 60, partition=p)
    with Producer(bootstrap(cluster), acks="all") as producer:
        for p in range(PARTITIONS):
            producer.send_batch("served", [b"x" * VALUE_BYTES] * RECORDS_PER_PARTITION, partition=p).result(60)
    yield cluster
    factory.teardown()


def bootstrap(cluster) -> str:
    return ",".join(p.address for p in cluster.of_role("broker"))


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    standalone = Standalone(tmp_path_factory.mktemp("spark-standalone"))
    try:
        standalone.start()
        yield standalone
    finally:
        pids = [p.pid for p in standalone.processes.values()]
        standalone.stop()
        wait_for(lambda: all_gone(pids), 30, "the master, the workers and their executors to be gone")


def submit(spark_cluster, job: str, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [str(BIN / "spark-submit"), "--master", spark_cluster.master_url,
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
         "--conf", "spark.driver.memory=512m", "--conf", "spark.executor.memory=512m",
         "--conf", "spark.executor.cores=1", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=4", str(JOBS_DIR / job), *args],
        capture_output=True, text=True, timeout=timeout, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def executors_ran(spark_cluster) -> int:
    """Applications the master has seen finish (each ran its executors on the workers)."""
    state = spark_cluster.master_state() or {}
    return len(state.get("completedapps", []))


def test_both_workers_registered(spark_cluster):
    state = spark_cluster.master_state()
    assert state["aliveworkers"] == 2 and state["cores"] == 2 and state["status"] == "ALIVE"


def test_the_report_runs_on_the_cluster(spark_cluster, cluster, tmp_path):
    out = tmp_path / "report"
    result = submit(spark_cluster, "report.py", "--gateway", cluster.gateway_address, "--out", out.as_uri(),
                    "--format", "csv")
    assert "Brokers (most leaders first)" in result.stdout
    brokers = (out / "brokers.csv")
    assert brokers.is_dir() and any(p.suffix == ".csv" for p in brokers.iterdir())
    assert (out / "leaders_replicas_per_broker.png").is_file()
    wait_for(lambda: executors_ran(spark_cluster) >= 1, 60, "the report's application to finish on the master")


def test_the_planner_runs_on_the_cluster(spark_cluster, cluster, tmp_path):
    plan = tmp_path / "plan.json"
    submit(spark_cluster, "planner.py", "--gateway", cluster.gateway_address, "--add-brokers", "4",
           "--racks", "4:a", "--out", str(plan))
    moved = json.loads(plan.read_text())
    assert moved["version"] == 1 and 4 in {b for p in moved["partitions"] for b in p["replicas"]}


def test_the_records_job_runs_on_the_cluster(spark_cluster, cluster, tmp_path):
    out = tmp_path / "traffic"
    submit(spark_cluster, "leader_traffic.py", "--bootstrap", bootstrap(cluster), "--subscribe", "served",
           "--gateway", cluster.gateway_address, "--out", str(out))
    rows = {}
    for part in (out / "per_partition.csv").glob("*.csv"):
        lines = part.read_text().splitlines()
        header = lines[0].split(",")
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            rows[int(row["partition"])] = (int(row["leader"]), int(row["records"]), int(row["bytes"]))
    assert set(rows) == set(range(PARTITIONS))
    assert all(records == RECORDS_PER_PARTITION and size == RECORDS_PER_PARTITION * VALUE_BYTES
               for _, records, size in rows.values())
    assert {leader for leader, _, _ in rows.values()} <= {1, 2, 3}
    # The report, the planner and this job: three applications the master ran on its workers.
    wait_for(lambda: executors_ran(spark_cluster) >= 3, 60, "three finished applications on the master")
