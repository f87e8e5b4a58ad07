"""Benchmark: the Spark topology report on a large synthetic export.

    .venv/bin/python bench/spark_report.py --partitions 1000000 --brokers 1000

Writes a synthetic export (schema version 1, Parquet, the files `replog export`
writes) into a temporary directory: topics of 1,000 partitions, RF 3, replicas
placed rack-aware over the brokers in 3 racks, sizes random, every 97th
partition offline, every 13th under-replicated, every 50th led by a
non-preferred replica. Then, in one local Spark session (default `local[2]`):

* the floor: Spark reading the partitions Parquet and counting its rows;
* `seconds`: the whole `replog-spark report` job — read and check the export,
  every table (cluster, brokers, topics, rack violations), printed tables,
  Parquet and CSV written, both PNG charts drawn.

The session's start-up is reported apart (`session_start_seconds`) and both
timings run after a small warm-up query, so neither pays for the JVM's first
query. The last stdout line is one JSON object. Goal (issue 7): under 60 s for
1,000,000 partitions and 1,000 brokers in local[2].
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from replog.spark import inputs, report, session, synthetic

GOAL_SECONDS = 60.0
PARTITIONS_PER_TOPIC = 1000
RACKS = ("a", "b", "c")


def synthetic_columns(partitions: int, brokers: int, rf: int, seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    broker_ids = np.arange(1, brokers + 1, dtype=np.int32)
    # Rack-alternating order (a1, b1, c1, a2, ...): consecutive runs span distinct racks.
    racks = np.array([RACKS[i % len(RACKS)] for i in range(brokers)], dtype=object)
    index = np.arange(partitions, dtype=np.int64)
    starts = (index * 7 + index // brokers) % brokers
    replicas = ((starts[:, None] + np.arange(rf)[None, :]) % brokers + 1).astype(np.int32)
    offsets = pa.array(np.arange(0, (partitions + 1) * rf, rf, dtype=np.int32))
    replica_lists = pa.ListArray.from_arrays(offsets, pa.array(replicas.ravel()))
    offline = index % 97 == 0
    under = index % 13 == 0
    leader = np.where(offline, -1, np.where(index % 50 == 0, replicas[:, 1], replicas[:, 0])).astype(np.int32)
    isr_width = np.where(under, rf - 1, rf)
    isr_offsets = np.concatenate([[0], np.cumsum(isr_width)]).astype(np.int32)
    isr_values = _isr_values(replicas, under, rf)
    columns = {
        "topic": pa.array([f"topic-{t:05d}" for t in range(partitions // PARTITIONS_PER_TOPIC + 1)])
        .take(pa.array(index // PARTITIONS_PER_TOPIC)),
        "partition": pa.array((index % PARTITIONS_PER_TOPIC).astype(np.int32)),
        "leader": pa.array(leader),
        "leader_epoch": pa.array(np.ones(partitions, dtype=np.int32)),
        "replicas": replica_lists,
        "isr": pa.ListArray.from_arrays(pa.array(isr_offsets), pa.array(isr_values.astype(np.int32))),
        "preferred_leader": pa.array(replicas[:, 0]),
        "under_replicated": pa.array(under),
        "unavailable": pa.array(offline),
        "under_min_isr": pa.array(offline),
        "min_insync_replicas": pa.array(np.full(partitions, 2, dtype=np.int32)),
        "log_end_offset": pa.array(rng.integers(0, 10**7, partitions)),
        "high_watermark": pa.array(rng.integers(0, 10**7, partitions)),
        "size_bytes": pa.array(rng.integers(0, 10**9, partitions)),
    }
    broker_columns = {"broker_id": pa.array(broker_ids), "rack": pa.array(list(racks), type=pa.string())}
    return broker_columns, columns


def _isr_values(replicas: np.ndarray, under: np.ndarray, rf: int) -> np.ndarray:
    """The ISR lists' values, row by row: the last replica dropped where under-replicated."""
    keep = np.ones(replicas.shape, dtype=bool)
    keep[under, rf - 1] = False
    return replicas[keep]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="spark-report-bench-") as tmp:
        started = time.monotonic()
        brokers, partitions = synthetic_columns(args.partitions, args.brokers, args.replication_factor, args.seed)
        export_dir = synthetic.write_export(Path(tmp) / "export", brokers, partitions)
        generate_seconds = time.monotonic() - started
        print(f"generated {args.partitions} partitions on {args.brokers} brokers in {generate_seconds:.1f} s")

        started = time.monotonic()
        spark = session.build(args.master, "spark-report bench", driver_memory=args.driver_memory)
        spark.range(1000).selectExpr("sum(id)").collect()      # the JVM's first query, outside both timings
        session_seconds = time.monotonic() - started

        started = time.monotonic()
        rows = spark.read.parquet(str(export_dir / "partitions.parquet")).count()
        floor_seconds = time.monotonic() - started
        assert rows == args.partitions, rows

        from replog.spark.main import build_parser

        job_args = build_parser().parse_args(["report", "--export", str(export_dir), "--out", str(Path(tmp) / "out")])
        printed = io.StringIO()
        started = time.monotonic()
        with contextlib.redirect_stdout(printed):
            report.run(spark, job_args)
        seconds = time.monotonic() - started
        cluster = inputs.read_export(spark, str(export_dir))
        expected_offline = (args.partitions + 96) // 97
        check = report.report(cluster.brokers, cluster.partitions)["cluster"].first()
        assert check.offline == expected_offline and check.partitions == args.partitions, check
        spark.stop()

    print(printed.getvalue().split("\n\n")[0])
    print(json.dumps({
        "seconds": round(seconds, 2), "partitions": args.partitions, "brokers": args.brokers,
        "floor_seconds": round(floor_seconds, 2), "floor": "spark.read.parquet(partitions).count()",
        "session_start_seconds": round(session_seconds, 2), "generate_seconds": round(generate_seconds, 2),
        "master": args.master, "goal_seconds": GOAL_SECONDS, "goal_met": seconds < GOAL_SECONDS,
    }))


if __name__ == "__main__":
    main()
