"""The records source as a stream: offsets live in Spark's checkpoint, so a query killed mid-way and
restarted writes every record exactly once into an idempotent sink (Spark's Parquet file sink).

The query runs in a process of its own (stream_to_parquet.py) reading a few hundred records per
micro-batch. It is killed (SIGKILL, the whole process group: driver JVM and Python workers) once
some batches are committed and before all are, more records are produced while it is down, and it
is started again on the same checkpoint, reading more records per micro-batch (its first batch replays
the one planned before the kill, with that batch's offsets). In the end the sink holds every
(partition, offset) once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from replog.client import Producer
from replog.devcluster import ClusterSpec
from tests.integration.broker_helpers import wait_for_isr, zk_session
from tests.integration.controller_helpers import create_topic, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]  # two Spark sessions, one after the other
PARTITIONS = 4
FIRST = 4000   # records before the first run
SECOND = 2000  # records produced while the query is down
PER_TRIGGER = 500  # the first run: eight micro-batches, killed after two
PER_TRIGGER_RESTARTED = 2000  # the rest in a few
SCRIPT = Path(__file__).with_name("stream_to_parquet.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("spark-stream"))
    yield factory(ClusterSpec(controllers=1, brokers=3, gateways=0))
    factory.teardown()


def bootstrap(cluster) -> str:
    return ",".join(p.address for p in cluster.of_role("broker"))


def produce(cluster, topic: str, count: int, first: int) -> None:
    with Producer(bootstrap(cluster), acks="all") as producer:
        futures = [producer.send_batch(topic, [b"%d" % i for i in range(first + p, first + count, PARTITIONS)],
                                       partition=p) for p in range(PARTITIONS)]
        producer.flush(120)
        for future in futures:
            future.result(60)


class Query:
    """The streaming query's process; killed with its whole process group."""

    def __init__(self, cluster, topic: str, out: Path, checkpoint: Path, log: Path, per_trigger: int) -> None:
        with open(log, "ab") as sink:
            self.process = subprocess.Popen(
                [sys.executable, str(SCRIPT), bootstrap(cluster), topic, str(out), str(checkpoint), str(per_trigger)],
                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=str(Path(__file__).resolve().parents[3]), env={**os.environ, "PYTHONPATH": str(
                    Path(__file__).resolve().parents[3])})

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(30)


def committed_batches(out: Path) -> int:
    metadata = out / "_spark_metadata"
    return len([p for p in metadata.iterdir() if p.name.isdigit()]) if metadata.is_dir() else 0


def test_a_killed_and_restarted_query_writes_every_record_once(spark, cluster, tmp_path):
    topic = "streamed"
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {p: ((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(PARTITIONS)},
                     {"min.insync.replicas": "1"})
        for p in range(PARTITIONS):
            wait_for_isr(cluster, zk, topic, {(p % 3) + 1, ((p + 1) % 3) + 1}, 60, partition=p)
    produce(cluster, topic, FIRST, 0)
    out, checkpoint, log = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "query.log"
    queries = []

    def sink_rows():
        return spark.read.parquet(str(out)).select("partition", "offset", "value").collect()

    try:
        first = Query(cluster, topic, out, checkpoint, log, PER_TRIGGER)
        queries.append(first)
        # FIRST / PER_TRIGGER = 8 micro-batches; kill once at least two are committed.
        wait_for(lambda: committed_batches(out) >= 2 or not first.alive(), 300,
                 "the first query to commit two micro-batches", interval_s=0.2)
        assert first.alive(), log.read_text()[-3000:]
        first.kill()
        written_before = len(sink_rows())
        assert 0 < written_before < FIRST, "the kill should land mid-way"

        produce(cluster, topic, SECOND, FIRST)
        second = Query(cluster, topic, out, checkpoint, log, PER_TRIGGER_RESTARTED)
        queries.append(second)
        # The sink is read (a Spark job, competing with the restarting query for the CPU) only once a
        # micro-batch more than last time is committed; listing the commits costs nothing.
        batches_read, rows = committed_batches(out), written_before

        def all_written() -> bool:
            nonlocal batches_read, rows
            batches = committed_batches(out)
            if batches > batches_read:
                batches_read, rows = batches, len(sink_rows())
            return rows >= FIRST + SECOND or not second.alive()
        wait_for(all_written, 300, "the restarted query to write every record", interval_s=0.2)
        assert second.alive(), log.read_text()[-3000:]
    finally:
        for query in queries:
            query.kill()

    rows = sink_rows()
    keys = [(r.partition, r.offset) for r in rows]
    assert len(keys) == len(set(keys)) == FIRST + SECOND  # nothing repeated, nothing skipped
    assert sorted(int(r.value) for r in rows) == list(range(FIRST + SECOND))
