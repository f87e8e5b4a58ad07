"""Benchmark: acks=all latency at many partitions, with the pauses and the memory that come with them.

    .venv/bin/python bench/scale.py --partitions 10000 --rate-mb-per-s 2 --seconds 60
    .venv/bin/python bench/scale.py --partitions 10000 --rate-mb-per-s 2 --seconds 60 --gc default

Starts its own local cluster (ZooKeeper, one controller, three brokers, one gateway), creates one
topic of `--partitions` partitions, RF 3 (min.insync.replicas 2, segment.bytes `--segment-bytes`,
32 KiB by default as in the run that showed the problem), warms every partition up with one batch,
then runs produce.py's latency mode (`produce.drive_fixed_rate`: every millisecond, the records due
at `--rate-mb-per-s` go to the next partition as one batch, one request in flight, acks=all).

Besides p50 / p99 produce-to-ack, it reports:

- `max_pause_ms`: the longest garbage collection of any service during the produce window, read from
  the services' `replog_gc_pause_seconds` histograms (scraped before and after the window). A
  histogram keeps buckets, not values, so this is the upper bound of the highest bucket that gained a
  collection (the buckets are in replog.common.metrics.table.GC_PAUSE_BUCKETS_S; 20 ms is one).
  `pauses` has, per process and generation, the window's collections, their total and that bound;
- `rss_per_replica_bytes`: the brokers' resident memory (VmRSS from /proc) after the window over the
  replicas they host (LogService.DescribeReplicas), and `rss_per_replica_bytes_above_empty`: the
  same above what the brokers held before the topic existed;
- the floor of the same run: `floor_acks_all_chain_ms` (floor_chain.py, as produce.py measures it),
  the acks=all chain of four processes on raw gRPC streams at the same offered load.

`--gc default|tuned` is what the services run with (REPLOG_GC, replog.common.gc_policy.configure):
alternate the two for a before/after. The JSON also has produce.py's `tail` and the CPU seconds of
every process during the window.

`--idle` measures instead what idle replicas cost one broker (`idle_point`): memory per hosted replica
and the time a broker takes from start to serving them, after a clean stop and after kill -9.

Runtime: about `--seconds` plus two minutes at 10,000 partitions (cluster start, topic creation and
warm-up take most of it; the floor 6 s), under a minute more at 1,000. Its figures:
docs/perf/scale.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import produce  # noqa: E402 - first: it configures gRPC's runtime before grpc loads, as every bench does

import floor_chain  # noqa: E402
import harness  # noqa: E402
import scale_idle  # noqa: E402
from pauses import pauses_between, scrape_pauses  # noqa: E402

from replog.client import Producer  # noqa: E402
from replog.common import cpu_scheduling, gc_policy  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

BROKERS = 3
REPLICATION_FACTOR = 3
RECORD_SIZE = 100
WARM_UP_PENDING_MAX = 2000  # warm-up batches in flight at once


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def brokers_rss_bytes(cluster) -> int:
    return sum(rss_bytes(process.pid) for process in cluster.of_role("broker"))


def warm_up(producer: Producer, partitions: int, payload: bytes) -> None:
    """One small batch into every partition (metadata, streams, first segments), many in flight at once."""
    pending = []
    for p in range(partitions):
        pending.append(producer.send_batch(produce.TOPIC, [payload] * 10, partition=p))
        if len(pending) >= WARM_UP_PENDING_MAX:
            for future in pending:
                future.result(timeout=120)
            pending.clear()
    for future in pending:
        future.result(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rate-mb-per-s", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--segment-bytes", type=int, default=32768, help="the topic's segment.bytes")
    parser.add_argument("--gc", choices=gc_policy.CHOICES, default=gc_policy.DEFAULT,
                        help=f"the services' garbage collector settings ({gc_policy.ENV})")
    parser.add_argument("--cpu-scheduling", choices=cpu_scheduling.CHOICES,
                        help="policy of every process of the run (default: realtime, as produce.py's latency mode)")
    parser.add_argument("--idle", action="store_true",
                        help="measure idle replicas on one broker instead: RSS per replica and start-up to serving, "
                             "clean and after kill -9 (scale_idle.py)")
    parser.add_argument("--partitions-per-topic", type=int, default=10_000, help="--idle: the largest topic")
    parser.add_argument("--startup-timeout-s", type=float, default=600.0,
                        help="--idle: the longest a stop or a start-up to serving may take")
    parser.add_argument("--keep", action="store_true", help="--idle: keep the cluster's state directory (logs)")
    args = parser.parse_args()
    if args.idle:
        harness.emit(scale_idle.idle_point(args))
        return
    os.environ[cpu_scheduling.ENV] = args.cpu_scheduling or os.environ.get(cpu_scheduling.ENV) or "realtime"
    policy = cpu_scheduling.configure()  # this process; the floor's and the cluster's inherit it
    # What produce.drive_fixed_rate reads: random records of RECORD_SIZE bytes, at most 1 MiB a batch.
    args.record_size, args.payload, args.json_pool = RECORD_SIZE, "random", []
    args.random_value = payload = os.urandom(RECORD_SIZE)
    args.batch_records = min(8000, (produce.BATCH_BYTES_MAX - 4096) // (RECORD_SIZE + 24))

    harness.note("measuring the acks=all chain floor")
    chain = floor_chain.measure(args.rate_mb_per_s, produce.CHAIN_FLOOR_SECONDS)
    harness.note(f"acks=all chain floor: {chain}")
    spec = ClusterSpec(controllers=1, brokers=BROKERS, gateways=1, env={gc_policy.ENV: args.gc})
    with harness.local_cluster(spec) as cluster:
        empty_rss = brokers_rss_bytes(cluster)
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        try:
            assignment = harness.rotating_assignment(args.partitions, list(range(1, BROKERS + 1)), REPLICATION_FACTOR)
            harness.create_topic(zk, produce.TOPIC, assignment, {"min.insync.replicas": "2",
                                                                 "segment.bytes": str(args.segment_bytes)})
        finally:
            zk.stop()
        endpoint = cluster.zookeeper_endpoint
        harness.wait_until(lambda: all(s is not None and s.leader >= 0 and len(s.isr) == REPLICATION_FACTOR
                                       for s in harness.read_states(endpoint, produce.TOPIC, args.partitions)),
                           600, "partition leaders and full ISRs", 1.0)
        producer = Producer([p.address for p in cluster.of_role("broker")], acks=-1, idempotent=True, linger_ms=0,
                            max_in_flight=1, batch_records_max=1_000_000, buffered_records_max=10_000_000,
                            request_timeout_ms=30_000)
        harness.note(f"warming up {args.partitions} partitions")
        warm_up(producer, args.partitions, payload)
        pauses_before = scrape_pauses(cluster)
        cpu_before = harness.cpu_by_process(cluster, "bench-producer")
        harness.note(f"producing {args.rate_mb_per_s:g} MB/s for {args.seconds:g} s")
        started = time.monotonic()
        acks, seconds = produce.drive_fixed_rate(producer, args, payload)
        window_s = time.monotonic() - started
        cpu_after = harness.cpu_by_process(cluster, "bench-producer")
        pauses = pauses_between(pauses_before, scrape_pauses(cluster))
        rss = brokers_rss_bytes(cluster)
        replicas = sum(harness.hosted(process.address) for process in cluster.of_role("broker"))
        try:
            producer.close(timeout_s=30)
        except TimeoutError:
            pass  # counted in unacknowledged_records_at_deadline
    bounds = [g["longest_ms_at_most"] for generations in pauses.values() for g in generations.values()
              if g["longest_ms_at_most"] is not None]
    result = {
        "partitions": args.partitions,
        "replication_factor": REPLICATION_FACTOR,
        "offered_mb_per_s": args.rate_mb_per_s,
        "seconds": round(seconds, 3),
        "window_s": round(window_s, 3),
        "segment_bytes": args.segment_bytes,
        "gc": args.gc,
        "cpu_scheduling": policy,
        "records": acks.records,
        "errors": len(acks.errors),
        "unacknowledged_records_at_deadline": acks.undelivered,
        "p50_ms": round(harness.percentile(acks.latencies_ms, 0.50), 2),
        "p99_ms": round(harness.percentile(acks.latencies_ms, 0.99), 2),
        "max_ms": round(max(acks.latencies_ms, default=float("nan")), 2),
        "max_pause_ms": max(bounds) if bounds else 0.0,
        "pauses": pauses,
        "replicas": replicas,
        "rss_brokers_bytes": rss,
        "rss_per_replica_bytes": round(rss / replicas) if replicas else None,
        "rss_per_replica_bytes_above_empty": round((rss - empty_rss) / replicas) if replicas else None,
        "floor_acks_all_chain_ms": {"p50": chain["p50"], "p99": chain["p99"]},
        "cpu_s": harness.cpu_used(cpu_before, cpu_after),
        "tail": produce.tail(acks, produce.GOAL_P99_MS_AT_10_MB_PER_S),
    }
    if acks.errors:
        harness.note(f"{len(acks.errors)} batch(es) failed, first: {acks.errors[0]}")
    harness.emit(result)


if __name__ == "__main__":
    main()
