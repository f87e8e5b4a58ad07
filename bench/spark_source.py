"""Benchmark: records per second read by the Spark ``replog`` source, against the replog Consumer.

    .venv/bin/python bench/spark_source.py [--records 300000] [--partitions 6] [--master local[2]]

Starts its own local cluster (ZooKeeper, one controller, three brokers), a topic of `--partitions`
partitions (RF 2), and fills it with `--records` 100-byte records through `send_batch`. Then, in
the same run, alternated `--rounds` times:

* source_records_per_s: ``spark.read.format("replog")...load()`` of the whole topic, counted by a
  Spark action that touches every row (``agg(count, sum(length(value)))``, so no column is pruned
  away), on `--master` (default local[2]: two Python workers read two partitions at once);
* consumer_records_per_s, the floor: one replog Consumer in this process iterating the same
  records (``for record in consumer``) until it has seen them all: what the source's readers do
  per partition, without Spark, on one thread.

The Spark session's start-up is reported apart (session_start_seconds) and one untimed whole read
runs first (the Python workers start and import the client then). The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.client import Consumer, Producer  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

TOPIC = "spark-source-bench"
RECORD_BYTES = 100
SEND_BATCH_RECORDS = 4000


def fill(bootstrap: list[str], records: int, partitions: int) -> None:
    value = b"v" * RECORD_BYTES
    with Producer(bootstrap, acks="all") as producer:
        futures = []
        for p in range(partitions):
            count = records // partitions + (1 if p < records % partitions else 0)
            for first in range(0, count, SEND_BATCH_RECORDS):
                futures.append(producer.send_batch(TOPIC, [value] * min(SEND_BATCH_RECORDS, count - first),
                                                   partition=p))
        producer.flush(600)
        for future in futures:
            future.result(60)


def read_with_source(spark, bootstrap: list[str], records: int, **options) -> float:
    from pyspark.sql import functions as F

    reader = spark.read.format("replog").option("bootstrap.servers", ",".join(bootstrap)).option("subscribe", TOPIC)
    for key, value in options.items():
        reader = reader.option(key, value)
    started = time.perf_counter()
    row = reader.load().agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).first()
    elapsed = time.perf_counter() - started
    assert row.n == records and row.bytes == records * RECORD_BYTES, (row, records)
    return elapsed


def read_with_consumer(bootstrap: list[str], records: int) -> float:
    started = time.perf_counter()
    seen = 0
    with Consumer(bootstrap, TOPIC, iteration_timeout_ms=30_000) as consumer:
        for _ in consumer:
            seen += 1
            if seen == records:
                break
    elapsed = time.perf_counter() - started
    assert seen == records, (seen, records)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="512m")
    args = parser.parse_args()
    with harness.local_cluster(ClusterSpec(controllers=1, brokers=3, gateways=0)) as cluster:
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        try:
            harness.create_topic(zk, TOPIC, harness.rotating_assignment(args.partitions, [1, 2, 3], 2),
                                 {"min.insync.replicas": "1"})
        finally:
            zk.stop()
        endpoint = cluster.zookeeper_endpoint
        harness.wait_until(lambda: all(s is not None and s.leader >= 0 and len(s.isr) == 2
                                       for s in harness.read_states(endpoint, TOPIC, args.partitions)),
                           60, "partition leaders")
        bootstrap = [p.address for p in cluster.of_role("broker")]
        harness.note(f"producing {args.records} records")
        fill(bootstrap, args.records, args.partitions)

        from replog.spark import session

        started = time.perf_counter()
        spark = session.build(args.master, "spark-source bench", driver_memory=args.driver_memory)
        session_start_s = time.perf_counter() - started
        try:
            # Warm-up, untimed: one whole read, so every Python worker of the master has started and imported.
            read_with_source(spark, bootstrap, args.records)
            source_s, consumer_s = [], []
            for round_index in range(args.rounds):
                source_s.append(read_with_source(spark, bootstrap, args.records))
                consumer_s.append(read_with_consumer(bootstrap, args.records))
                harness.note(f"round {round_index + 1}: source {source_s[-1]:.2f} s, consumer {consumer_s[-1]:.2f} s")
        finally:
            spark.stop()
    source_rate = args.records / statistics.median(source_s)
    consumer_rate = args.records / statistics.median(consumer_s)
    harness.emit({"records": args.records, "record_bytes": RECORD_BYTES, "partitions": args.partitions,
                  "master": args.master, "rounds": args.rounds, "session_start_seconds": round(session_start_s, 2),
                  "source_seconds": [round(s, 2) for s in source_s], "consumer_seconds": [round(s, 2) for s in consumer_s],
                  "source_records_per_s": round(source_rate), "consumer_records_per_s": round(consumer_rate),
                  "source_vs_consumer": round(source_rate / consumer_rate, 3)})


if __name__ == "__main__":
    main()
