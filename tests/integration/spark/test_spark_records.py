"""The records source (``spark.read.format("replog")`` with bootstrap.servers) against a real cluster.

Exactness: records produced to 12 partitions, a different number to each, are counted per partition
exactly, with every (partition, offset) once, also when big partitions are split into several Spark
tasks; and a partition whose leader is killed in the middle of a read is counted exactly too. The default
size is small for a busy 2-core machine; ``make spark-records-exact`` runs the same test with
REPLOG_SPARK_EXACT_RECORDS=1000000.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from replog.client import Producer
from replog.common.security import local
from replog.devcluster import ClusterSpec
from tests.integration.broker_helpers import (
    broker_name, partition_state, wait_for, wait_for_isr, wait_for_leader, zk_session,
)
from tests.integration.controller_helpers import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]  # the 1M run: minutes on a busy machine
PARTITIONS = 12
TOTAL = int(os.environ.get("REPLOG_SPARK_EXACT_RECORDS", "24000"))
CHUNK = 2000  # records per send_batch


def per_partition_counts(total: int) -> dict[int, int]:
    """Unequal counts summing to ``total``: partition p gets a share weighted by p + 1."""
    weights = {p: p + 1 for p in range(PARTITIONS)}
    counts = {p: total * w // sum(weights.values()) for p, w in weights.items()}
    counts[PARTITIONS - 1] += total - sum(counts.values())
    return counts


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("spark-records"))
    yield factory(ClusterSpec(controllers=1, brokers=3, gateways=0))
    factory.teardown()


def bootstrap(cluster) -> str:
    return ",".join(p.address for p in cluster.of_role("broker"))


def create(cluster, topic: str, partitions: int) -> None:
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {p: tuple((p + i) % 3 + 1 for i in range(2)) for p in range(partitions)},
                     {"min.insync.replicas": "1"})
        for p in range(partitions):
            wait_for_isr(cluster, zk, topic, {(p % 3) + 1, ((p + 1) % 3) + 1}, 60, partition=p)


@pytest.fixture(scope="module")
def counted(cluster) -> dict[int, int]:
    """Topic "counted": per_partition_counts(TOTAL) records, value b"<partition>:<i>"."""
    create(cluster, "counted", PARTITIONS)
    counts = per_partition_counts(TOTAL)
    with Producer(bootstrap(cluster), acks="all") as producer:
        futures = []
        for partition, count in counts.items():
            for first in range(0, count, CHUNK):
                values = [b"%d:%d" % (partition, i) for i in range(first, min(count, first + CHUNK))]
                futures.append(producer.send_batch("counted", values, partition=partition))
        producer.flush(300)
        for future in futures:
            future.result(60)
    return counts


def records(spark, cluster, topic: str, **options):
    reader = spark.read.format("replog").option("bootstrap.servers", bootstrap(cluster)).option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_every_partition_is_counted_exactly(spark, cluster, counted):
    frame = records(spark, cluster, "counted")
    got = {r.partition: (r.n, r.lo, r.hi, r.distinct) for r in frame.groupBy("partition").agg(
        F().count("*").alias("n"), F().min("offset").alias("lo"), F().max("offset").alias("hi"),
        F().countDistinct("offset").alias("distinct")).collect()}
    assert got == {p: (n, 0, n - 1, n) for p, n in counted.items()}
    assert frame.rdd.getNumPartitions() == PARTITIONS  # one Spark partition per topic partition


def test_big_partitions_split_by_offset_count(spark, cluster, counted):
    piece = max(1, TOTAL // 40)
    frame = records(spark, cluster, "counted", maxRecordsPerPartition=str(piece))
    assert frame.rdd.getNumPartitions() == sum(-(-n // piece) for n in counted.values())
    got = {r.partition: r.n for r in frame.groupBy("partition").agg(F().countDistinct("offset").alias("n")).collect()}
    assert got == counted
    assert frame.count() == TOTAL


def test_offset_options_pick_ranges(spark, cluster, counted):
    starting = json.dumps({"counted": {"0": 5, "1": -2}})
    ending = json.dumps({"counted": {"0": 9, "2": 3}})
    frame = records(spark, cluster, "counted", startingOffsets=starting, endingOffsets=ending)
    got = {r.partition: r.n for r in frame.groupBy("partition").agg(F().count("*").alias("n")).collect()}
    # partition 0: [5, 9); 2: [earliest, 3); every other partition from earliest to latest.
    assert got == {**counted, 0: 4, 2: 3}
    first = frame.where("partition = 0").orderBy("offset").first()
    assert (first.offset, first.value, first.topic) == (5, b"0:5", "counted")
    assert records(spark, cluster, "counted", startingOffsets="latest").count() == 0


def test_timestamp_options_pick_ranges(spark, cluster):
    create(cluster, "stamped", 2)
    t0 = 1_700_000_000_000
    with Producer(bootstrap(cluster), acks="all") as producer:
        for partition in (0, 1):
            for i in range(300):
                producer.send("stamped", b"%d:%d" % (partition, i), partition=partition, timestamp_ms=t0 + i * 10)
        producer.flush(120)
    frame = records(spark, cluster, "stamped", startingTimestamp=str(t0 + 1000), endingTimestamp=str(t0 + 2000))
    got = {r.partition: (r.lo, r.hi) for r in frame.groupBy("partition").agg(
        F().min("offset").alias("lo"), F().max("offset").alias("hi")).collect()}
    assert got == {0: (100, 199), 1: (100, 199)}  # stamped t0 + 1000 up to, not including, t0 + 2000
    by_partition = records(spark, cluster, "stamped", startingOffsetsByTimestamp=json.dumps({"stamped": {"1": t0 + 2990}}))
    assert {r.partition: r.n for r in by_partition.groupBy("partition").agg(F().count("*").alias("n")).collect()} == {
        0: 300, 1: 1}
    assert records(spark, cluster, "stamped", startingTimestamp=str(t0 + 10**9)).count() == 0  # after every record


def test_columns_carry_keys_headers_and_timestamps(spark, cluster):
    create(cluster, "columns", 2)
    with Producer(bootstrap(cluster), acks="all") as producer:
        producer.send("columns", b"v1", key=b"k1", headers=[("h", b"x"), ("n", None)], timestamp_ms=1_700_000_000_000,
                      partition=1).result(30)
        producer.send("columns", b"v2", partition=1).result(30)
    frame = records(spark, cluster, "columns")
    assert [f.name for f in frame.schema.fields] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                                     "timestampType", "headers"]
    rows = frame.orderBy("offset").collect()
    assert [(r.key, r.value, r.partition, r.offset) for r in rows] == [(b"k1", b"v1", 1, 0), (None, b"v2", 1, 1)]
    assert [(h.key, h.value) for h in rows[0].headers] == [("h", b"x"), ("n", None)]
    assert int(rows[0].timestamp.timestamp() * 1000) == 1_700_000_000_000 and rows[1].headers == []


def test_bad_options_fail_with_their_names(spark, cluster, counted):
    with pytest.raises(Exception, match="subscribe"):
        spark.read.format("replog").option("bootstrap.servers", bootstrap(cluster)).load().count()
    with pytest.raises(Exception, match="startingOffsets"):
        records(spark, cluster, "counted", startingOffsets="yesterday").count()
    with pytest.raises(Exception, match="past its high watermark"):
        records(spark, cluster, "counted", endingOffsets=json.dumps({"counted": {"0": 10**9}})).count()


def test_tls_options_name_the_files_the_read_uses(spark, cluster, counted):
    """The cluster's own operator files given as options, not from the environment: a small read of partition 0;
    a key that is not the certificate's fails the read naming it, so the options are what the read used."""
    files = cluster.operator_tls
    tls = {"tls_ca_file": files.ca_file, "tls_cert_file": files.cert_file, "tls_key_file": files.key_file}
    starting = json.dumps({"counted": {str(p): 0 if p == 0 else -1 for p in range(PARTITIONS)}})
    ending = json.dumps({"counted": {"0": min(50, counted[0])}})
    frame = records(spark, cluster, "counted", startingOffsets=starting, endingOffsets=ending, **tls)
    assert sorted((r.partition, r.offset) for r in frame.select("partition", "offset").collect()) == [
        (0, offset) for offset in range(min(50, counted[0]))]
    other_key = os.environ[local.ENV_KEY]  # the session's operator key, another certificate's
    with pytest.raises(Exception, match=f"the key {other_key} does not belong to the certificate"):
        records(spark, cluster, "counted", startingOffsets=starting, endingOffsets=ending,
                **{**tls, "tls_key_file": other_key}).count()


def test_a_leader_killed_during_a_read_changes_no_count(spark, cluster):
    """kill -9 of the leader once the read's first task is done: the tasks still to read that partition follow
    the new leader (Consumer metadata) and every offset is read once (on local[2] no task is retried: a failed
    one would fail the count). The killed broker is started again and waited for (the module's cluster serves
    the next tests), and the leaderships it had stay moved."""
    count, piece = 12_000, 1_000  # 12 tasks on 2 cores: 10 are left when the first is done
    create(cluster, "failover", 1)
    with Producer(bootstrap(cluster), acks="all") as producer:
        futures = [producer.send_batch("failover", [b"%d" % i for i in range(first, first + CHUNK)], partition=0)
                   for first in range(0, count, CHUNK)]
        producer.flush(120)
        for future in futures:
            future.result(60)
    with zk_session(cluster) as zk:
        leader = wait_for_leader(cluster, zk, "failover", None, 30).leader
    frame = records(spark, cluster, "failover", maxRecordsPerPartition=str(piece))
    tracker = spark.sparkContext.statusTracker()

    def read_stage():  # the stage of the read's tasks, once one of them is done
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        return next((s for s in stages if s is not None and s.numTasks == count // piece
                     and s.numCompletedTasks >= 1), None)

    name = broker_name(leader)
    with ThreadPoolExecutor(1) as pool:
        counting = pool.submit(lambda: tuple(frame.agg(F().count("*"), F().countDistinct("offset")).first()))
        try:
            wait_for(lambda: read_stage() or counting.done(), 60, "the first task of the read to finish", 0.02)
            cluster.kill(name)
            killed_during_the_read = not counting.done()
            assert counting.result(120) == (count, count)
            assert killed_during_the_read, "the read ended before the leader was killed: nothing was tested"
        finally:
            cluster.start(name)
            cluster.wait_healthy([name], 60)
    with zk_session(cluster) as zk:
        assert partition_state(zk, "failover").leader not in (leader, -1)


def F():
    from pyspark.sql import functions

    return functions
