"""Benchmark: produce throughput and latency through replicated partitions.

    .venv/bin/python bench/produce.py --acks all --records 2000000
    .venv/bin/python bench/produce.py --acks all --rate-mb-per-s 10 --seconds 20

Starts its own local cluster in a temporary directory (ZooKeeper, one
controller, max(3, RF) brokers), creates a topic of `--partitions` partitions
with `--replication-factor` replicas (min.insync.replicas = min(2, RF)), and
drives the client library's Producer: `send_batch` hands it `--batch-records`
records at a time (one future per batch, not per record); the producer encodes
each batch once (CRC-32C, producer id and sequence when idempotent, which
acks=all is) and keeps up to `--max-in-flight` requests in flight per partition
on its ProduceStream to the leader (the broker appends them in the order sent).

Throughput mode (default): batches are queued as fast as the producer takes
them, with `--queued-batches` + 1 per partition given to the producer and not
yet acknowledged at any time (so up to 3 of its 5 may be in flight by default;
`--queued-batches 5` reached 894,455 records/s once, with a p50 of 45 ms against 27).
records_per_s / mb_per_s count acknowledged records over the run; p50_ms /
p99_ms are produce-to-ack times per batch, from `send_batch` to the ack
(queueing in the producer included).

Latency mode (`--rate-mb-per-s R`): every millisecond the records due at R MB/s
are handed to the producer as one batch, for `--seconds`; the latencies are the
same produce-to-ack times at that fixed offered load. Its defaults are the
producer settings for latency (linger 0, one request in flight: what arrives
during a round trip leaves in the next request); throughput mode's are for
throughput (linger 1 ms, 5 in flight). Both are flags, and reported.

floor_grpc_stream_mb_per_s: measured in the same run (floor_grpc.py), two local
processes stream 1 MiB messages over one raw gRPC stream (bytes, no schema, no
broker): the most any gRPC transport moves on this machine. In latency mode also
floor_grpc_stream_round_trip_ms: p50 / p99 of one message (a millisecond's
records at the offered rate) out and its echo back over an open raw stream
between two processes, on the threaded gRPC stack the services use; an acks=all
produce needs at least two such exchanges (producer and leader, leader and
follower) besides two appends. floor_grpc_aio_stream_round_trip_ms is the same
on grpc.aio at both ends, for comparison (first measured 0.17 against 0.26 ms
p50, with 40% less client CPU per exchange). floor_acks_all_chain_ms (latency
mode, acks=all, RF 3): p50 / p99 of the same offered load, ticks and one request
in flight through the whole acks=all chain on raw bytes streams, with nothing
else: producer, leader, two followers pulling, as four processes on the
threaded gRPC stack (floor_chain.py). It is what the goal leaves to the broker
and producer themselves. cpu_s gives the CPU seconds
each role used during the run (from /proc), which shows what bounds it.
In latency mode `tail` says how the slowest batches spread over the run:
how many reached the goal, in how many 100 ms windows the batches at or over
the p99 fell, and the worst windows (`tail()`). A tail in few windows came
in episodes (a segment roll, a stall of the machine), not from every cycle.

`--hops` (latency mode, one request in flight) has the services and the
producer mark each hop of every produce cycle (replog.common.hopmarks) and
reports, under "hops", p50 / p90 / p99 microseconds per hop in the chain's
order: producer to leader, the leader's append, each follower's answer, wire
hops and append, its next request back, the produce answer (bench/hops.py).
It answers where the time between the chain floor and our latency goes.

Every process of the run, this one and the floors' included, runs gRPC core
with replog's settings (replog.common.grpc_runtime: EventEngine's client and
listener off, one thread hop fewer per message); the JSON reports them as
grpc_experiments. Likewise every process runs under one CPU scheduling policy
(replog.common.cpu_scheduling), reported as cpu_scheduling: `--cpu-scheduling`,
else REPLOG_CPU_SCHEDULING, else the setting for the mode. Throughput mode runs
under the services' default, batch (SCHED_BATCH: a woken thread does not
preempt a running one). Latency mode runs under realtime (SCHED_RR at the
lowest real-time priority), the setting for a host where latency comes first.
That needs root or CAP_SYS_NICE; without either, the run falls back to batch and
says so. docs/perf/cpu-scheduling.md has both policies' figures.

`--compression none|gzip|lz4|zstd|snappy` has the producer compress each batch
(replog.common.records.compression). With a codec the records are compressible ones
(`--payload json`): a pool of distinct JSON-like objects of about `--record-size` bytes
(ids, names, enums, amounts, timestamps, as an application's events look), cycled through.
Without one they are random bytes (`--payload random`), which no codec shrinks, as in every
earlier uncompressed figure; `--payload` chooses either way. The JSON reports `bytes_on_disk`:
the leader's log segments of the topic after the run, and per record.

`--compare none,gzip,lz4,zstd,snappy` (throughput mode) compares codecs in one run on one
cluster: `--rounds` rounds (3 by default), each producing `--records` records with every
codec in turn, each run into a topic of its own (same partitions and replicas) with a
producer of its own, on the same payload (json unless `--payload random`). Alternating
spreads the machine's drifts over every codec. The last line is then one JSON object with,
per codec, the median and every run's records/s, the leader's log bytes (and per record,
warm-up records included) and the producer's CPU seconds (docs/perf/compression.md).

`--durability durable` gives the topic `flush.messages=1`, the durable mode: the leader
and every follower fsync each batch before it counts toward the HW (docs/durability.md);
`default` (the default) leaves fsync to the brokers' flush policy. Either way the run
measures floor_fdatasync on the leader's log directory before producing
(floor_fdatasync.py): a loop of write + fdatasync of one batch's bytes (a millisecond's
records in latency mode), the least a durable append costs on that disk.

`--retention-bytes N` runs with retention active on every partition: the topic
gets retention.bytes=N, and the brokers check every `--retention-check-interval-ms`.
For retention to really delete within a run spread over 10,000 partitions the
segments must be small: `--segment-bytes` sets the topic's segment.bytes. Small
segments cost rolls of their own (a new file and a directory fsync each), so
compare with the same `--segment-bytes` without `--retention-bytes`: the
difference is retention's. At 10,000 partitions rolls that small swamp the run
(docs/perf/retention-10k-partitions.md); `--prefill-segments K` rolls before the
window instead: K segments per partition, untimed, then segment.bytes goes back
to the default and only then retention.bytes is set, so the window holds the
deletions and (almost) no rolls. The JSON reports both settings under "retention",
with how many partitions' leaders had moved their log start by the end.

`--profile DIR` records py-spy flame graphs (speedscope JSON) of the leader
broker, one follower and this process during the run (py-spy must be on PATH
or in the venv; it is a profiling tool, not a dependency).

The last line of standard output is one JSON object. Goal (issue 3): acks=all,
RF 3, 100-byte records, one producer: 421,823 records/s; p99 under 5 ms at a
fixed 10 MB/s.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from replog.common import cpu_scheduling, grpc_runtime

grpc_runtime.configure()  # before grpc loads: this process and its children run gRPC as the services do

sys.path.insert(0, str(Path(__file__).resolve().parent))

import floor_chain  # noqa: E402
import floor_fdatasync  # noqa: E402
import floor_grpc  # noqa: E402
import harness  # noqa: E402
import hops  # noqa: E402

from replog.client import Producer  # noqa: E402
from replog.common.records import CODECS  # noqa: E402
from replog.common import hopmarks  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import log_pb2, log_pb2_grpc  # noqa: E402

TOPIC = "produce-bench"
GOAL_RECORDS_PER_S = 421_823
GOAL_P99_MS_AT_10_MB_PER_S = 5.0
MIB = 1024 * 1024
RETENTION_ROUNDS = "replog_broker_retention_round_seconds_count"
UNDER_REPLICATED = "replog_broker_under_replicated_partitions"
TAIL_WINDOW_S = 0.1  # latency mode: the tail's time windows
TAIL_WORST_WINDOWS = 5
CHAIN_FLOOR_SECONDS = 5.0  # the acks=all chain floor's measured time (after a 1 s warm-up)
BATCH_BYTES_MAX = MIB  # the producer's and the brokers' default batch limit


# --- measuring ----------------------------------------------------------------------------------

class Acks:
    """Produce-to-ack times per batch and acknowledged records, filled from future callbacks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies_ms: list[float] = []
        self.sent_s: list[float] = []  # when each batch of `latencies_ms` was handed over (perf_counter)
        self.records = 0
        self.errors: list[str] = []
        self.last_ack_s = 0.0
        self.undelivered = 0  # records not acknowledged (failed or pending) when the run gave up waiting

    def track(self, future: Future, sent_s: float, count: int, on_done=None) -> None:
        def done(f: Future) -> None:
            now = time.perf_counter()
            with self.lock:
                if f.exception() is not None:
                    self.errors.append(str(f.exception()))
                else:
                    self.latencies_ms.append((now - sent_s) * 1000)
                    self.sent_s.append(sent_s)
                    self.records += count
                    self.last_ack_s = now
            if on_done is not None:
                on_done()
        future.add_done_callback(done)


JSON_EVENTS = ("order_created", "order_paid", "order_shipped", "cart_viewed", "refund_requested")
JSON_REGIONS = ("eu-west-1", "us-east-1", "ap-south-1")


def json_pool(record_size: int, count: int = 4096) -> list[bytes]:
    """`count` distinct JSON-like records of about `record_size` bytes: what `--payload json` cycles through."""
    rng = random.Random(59)
    pool = []
    for i in range(count):
        event = {"id": 10_000_000 + i, "user": f"user-{rng.randrange(100_000):06d}",
                 "event": rng.choice(JSON_EVENTS), "region": rng.choice(JSON_REGIONS),
                 "amount_cents": rng.randrange(100_000), "ts_ms": 1_700_000_000_000 + i * 17, "items": []}
        while len(json.dumps(event)) < record_size:
            event["items"].append({"sku": f"SKU-{rng.randrange(10_000):05d}", "qty": rng.randrange(1, 5)})
        pool.append(json.dumps(event, separators=(",", ":")).encode())
    return pool


def payloads(args, count: int) -> list[bytes]:
    """`count` record values: random bytes (one value, repeated), or `--payload json`'s pool cycled."""
    if args.payload == "random":
        return [args.random_value] * count
    return [args.json_pool[i % len(args.json_pool)] for i in range(count)]


def log_bytes(directory: Path, topic: str) -> int:
    """Bytes of the topic's log segments under one broker's data directory (`<topic>-<partition>` folders
    only: `produce-bench-r1-zstd` is not a partition of `produce-bench`)."""
    def is_partition(folder: Path) -> bool:
        name, _, partition = folder.name.rpartition("-")
        return folder.is_dir() and name == topic and partition.isdigit()

    folders = [folder for folder in directory.glob(f"**/{topic}-*") if is_partition(folder)]
    return sum(f.stat().st_size for folder in folders for f in folder.glob("*.log"))


def drive_throughput(producer: Producer, args, topic: str) -> tuple[Acks, float]:
    acks = Acks()
    values = payloads(args, args.batch_records)
    batches = (args.records + args.batch_records - 1) // args.batch_records
    slots = threading.Semaphore(args.partitions * (args.queued_batches + 1))
    started = time.perf_counter()
    for i in range(batches):
        slots.acquire()
        count = min(args.batch_records, args.records - i * args.batch_records)
        sent_s = time.perf_counter()
        future = producer.send_batch(topic, values[:count] if count < len(values) else values,
                                     partition=i % args.partitions)
        acks.track(future, sent_s, count, slots.release)
    producer.flush(timeout_s=300)
    return acks, acks.last_ack_s - started


def prefill(producer: Producer, args, payload: bytes) -> None:
    """--prefill-segments K: 2K + 1 batches of half a segment into every partition, untimed, so each partition
    holds K full segments and an active one with room for a window's first batch: the config change that
    follows (segment.bytes lifted) reaches the brokers before any partition would roll again."""
    harness.note(f"prefilling {args.prefill_segments} segment(s) of {args.segment_bytes} bytes per partition")
    per_batch = max(1, (args.segment_bytes // 2 - 100) // (args.record_size + 24))
    pending = []
    for _ in range(2 * args.prefill_segments + 1):
        for p in range(args.partitions):
            pending.append(producer.send_batch(TOPIC, [payload] * per_batch, partition=p))
            if len(pending) >= 2000:
                for future in pending:
                    future.result(timeout=300)
                pending.clear()
    for future in pending:
        future.result(timeout=300)


def drive_fixed_rate(producer: Producer, args, topic: str) -> tuple[Acks, float]:
    acks = Acks()
    records_per_s = args.rate_mb_per_s * 1_000_000 / args.record_size
    started = time.perf_counter()
    due = 0.0
    sent = 0
    tick = 0
    while True:
        now = time.perf_counter()
        elapsed = now - started
        if elapsed >= args.seconds:
            break
        due = records_per_s * elapsed
        count = int(due) - sent
        if count > 0:
            # Normally a millisecond's worth; after a stall of this process, more, in pieces
            # that each fit in one batch.
            for start in range(0, count, args.batch_records):
                piece = min(args.batch_records, count - start)
                future = producer.send_batch(topic, payloads(args, piece), partition=tick % args.partitions)
                acks.track(future, now, piece)
            sent += count
            tick += 1
        time.sleep(max(0.0, started + (tick + 1) * 0.001 - time.perf_counter()))
    try:
        producer.flush(timeout_s=60)
    except TimeoutError:
        # A run whose tail never came back is a result too: reported, not a traceback.
        acks.undelivered = sent - acks.records
    return acks, args.seconds


def tail(acks: Acks, goal_ms: float, window_s: float = TAIL_WINDOW_S) -> dict:
    """How the slowest batches of a latency run spread over time.

    `at_or_over_goal`: batches whose latency reached the goal, and their share.
    `p99_windows`: how many `window_s` windows of the run (by send time) hold
    the batches at or over the p99; few means the tail came in episodes.
    `worst_windows`: the windows holding most of them, as [start s into the
    run, batches], most first (a 64 MiB segment roll of all three brokers
    shows here: at 10 MB/s, every 6.4 s or so).
    """
    if not acks.latencies_ms:
        return {}
    start = min(acks.sent_s)
    p99 = harness.percentile(acks.latencies_ms, 0.99)
    windows = collections.Counter(int((sent - start) / window_s)
                                  for sent, latency in zip(acks.sent_s, acks.latencies_ms) if latency >= p99)
    over = sum(1 for latency in acks.latencies_ms if latency >= goal_ms)
    worst = sorted(windows.items(), key=lambda item: (-item[1], item[0]))[:TAIL_WORST_WINDOWS]
    return {
        "window_s": window_s,
        "at_or_over_goal": {"batches": over, "share": round(over / len(acks.latencies_ms), 4)},
        "p99_windows": len(windows),
        "worst_windows": [[round(index * window_s, 2), count] for index, count in worst],
    }


# --- main ------------------------------------------------------------------------------------------

def trimmed_partitions(cluster) -> int:
    """Partitions whose leader's log start has moved (retention deleted segments), asked of every broker."""
    count = 0
    for process in cluster.of_role("broker"):
        with cluster.channel(process.address) as channel:
            reply = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(log_pb2.DescribeReplicasRequest(),
                                                                           timeout=60)
        count += sum(1 for r in reply.replicas if r.leader and r.log_start_offset > 0)
    return count


def create_ready_topic(cluster, topic: str, assignment: dict[int, tuple[int, ...]], configs: dict,
                       replication_factor: int) -> None:
    """Create `topic` and wait until every partition has a leader and a whole ISR."""
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        harness.create_topic(zk, topic, assignment, configs)
    finally:
        zk.stop()
    harness.wait_until(lambda: all(s is not None and s.leader >= 0 and len(s.isr) == replication_factor
                                   for s in harness.read_states(cluster.zookeeper_endpoint, topic, len(assignment))),
                       30, f"partition leaders of {topic}")


def start_producer(cluster, args, acks: int, compression: str) -> Producer:
    bootstrap = [p.address for p in cluster.of_role("broker")]
    return Producer(bootstrap, acks=acks, idempotent=acks == -1, linger_ms=args.linger_ms,
                    max_in_flight=args.max_in_flight, compression_type=compression,
                    batch_records_max=1_000_000, buffered_records_max=10_000_000, request_timeout_ms=30_000)


WARM_UP_RECORDS = 10  # per partition: metadata, connections, the first batch of every partition


def warm_up(producer: Producer, args, topic: str) -> int:
    """Produce the first records of every partition, untimed; returns how many."""
    for p in range(args.partitions):
        producer.send_batch(topic, payloads(args, WARM_UP_RECORDS), partition=p).result(timeout=30)
    return WARM_UP_RECORDS * args.partitions


def compare_codecs(cluster, args, acks: int, assignment: dict[int, tuple[int, ...]], configs: dict) -> dict:
    """--compare: `args.rounds` rounds of one run per codec, in order, each into a new topic; by codec, the
    medians and every run's records/s, the leader's log bytes and the producer's CPU seconds."""
    leader_dir = cluster.data_dir(f"broker-{assignment[0][0]}")
    runs: dict[str, list[dict]] = {codec: [] for codec in args.codecs}
    for round_number in range(1, args.rounds + 1):
        for codec in args.codecs:
            topic = f"{TOPIC}-r{round_number}-{codec}"
            create_ready_topic(cluster, topic, assignment, configs, args.replication_factor)
            producer = start_producer(cluster, args, acks, codec)
            warmed = warm_up(producer, args, topic)
            cpu_before_s = harness.cpu_seconds(os.getpid())
            results, seconds = drive_throughput(producer, args, topic)
            cpu_s = harness.cpu_seconds(os.getpid()) - cpu_before_s
            producer.close(timeout_s=30)
            on_disk = log_bytes(leader_dir, topic)
            run = {"records_per_s": round(results.records / seconds) if seconds > 0 else 0,
                   "leader_log_bytes": on_disk, "bytes_per_record": round(on_disk / (results.records + warmed), 1),
                   "producer_cpu_s": round(cpu_s, 2), "errors": len(results.errors)}
            runs[codec].append(run)
            harness.note(f"round {round_number}, {codec}: {run}")
    return {codec: {"records_per_s": round(statistics.median(r["records_per_s"] for r in codec_runs)),
                    "records_per_s_runs": [r["records_per_s"] for r in codec_runs],
                    "leader_log_bytes": round(statistics.median(r["leader_log_bytes"] for r in codec_runs)),
                    "bytes_per_record": statistics.median(r["bytes_per_record"] for r in codec_runs),
                    "producer_cpu_s": round(statistics.median(r["producer_cpu_s"] for r in codec_runs), 2),
                    "errors": sum(r["errors"] for r in codec_runs)}
            for codec, codec_runs in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acks", choices=("0", "1", "all"), default="all")
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--batch-records", type=int, default=0,
                        help="records per send_batch call (default: 8,000, or fewer so a call fits in 1 MiB)")
    parser.add_argument("--queued-batches", type=int, default=2,
                        help="batches per partition handed to the producer beyond the first, unacknowledged at once")
    parser.add_argument("--max-in-flight", type=int, default=0,
                        help="producer requests in flight per partition (default: 5, or 1 in latency mode)")
    parser.add_argument("--linger-ms", type=int, default=-1, help="producer linger (default: 1, or 0 in latency mode)")
    parser.add_argument("--rate-mb-per-s", type=float, default=0.0, help="latency mode: fixed offered load")
    parser.add_argument("--seconds", type=float, default=15.0, help="latency mode: how long")
    parser.add_argument("--hops", action="store_true",
                        help="latency mode: time each hop of every produce cycle across the processes (bench/hops.py)")
    parser.add_argument("--profile", metavar="DIR", help="record py-spy profiles of leader, follower and producer")
    parser.add_argument("--retention-bytes", type=int, default=0,
                        help="retention.bytes of every partition (0: retention off, the default)")
    parser.add_argument("--segment-bytes", type=int, default=0,
                        help="segment.bytes of every partition (0: the brokers' default); small, with "
                             "--retention-bytes, so retention deletes within the run")
    parser.add_argument("--prefill-segments", type=int, default=0,
                        help="before the measured window, fill every partition with this many segments of "
                             "--segment-bytes (untimed), then lift segment.bytes to the default and only then set "
                             "--retention-bytes: the window measures retention's deletions, not segment rolls")
    parser.add_argument("--retention-check-interval-ms", type=int, default=1000,
                        help="the brokers' log_retention_check_interval_ms with --retention-bytes")
    parser.add_argument("--disk-syncs-per-s-min", type=float, default=0.0,
                        help="before the cluster starts and again before the measured window, wait (up to "
                             "--disk-wait-s) until 4 KB write + fdatasync reaches this rate on the data disk "
                             "(half an idle probe's, say), so that a run does not measure the last one's files "
                             "still being written out; 0: no wait")
    parser.add_argument("--disk-wait-s", type=float, default=1200.0, help="the longest --disk-syncs-per-s-min wait")
    parser.add_argument("--broker-args", default="", help="extra broker flags, e.g. '--segment-bytes 1073741824'")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's state directory")
    parser.add_argument("--compression", choices=sorted(CODECS), default="none",
                        help="the producer's compression_type (default none)")
    parser.add_argument("--compare", metavar="CODECS",
                        help="comma-separated codecs, e.g. none,gzip,lz4,zstd,snappy: throughput mode, --rounds "
                             "rounds of one --records run per codec in turn on one cluster; prints each codec's "
                             "median records/s and bytes on disk")
    parser.add_argument("--rounds", type=int, default=3, help="with --compare: how many rounds (default 3)")
    parser.add_argument("--payload", choices=("random", "json"),
                        help="record values: json (JSON-like records, compressible) or random (incompressible "
                             "bytes). Default: json with a codec (--compression other than none, or --compare), "
                             "random without one")
    parser.add_argument("--durability", choices=("default", "durable"), default="default",
                        help="durable: the topic gets flush.messages=1, every replica fsyncs each batch before it "
                             "counts toward the HW; default: the brokers' flush policy")
    parser.add_argument("--tracing", choices=("on", "off"), default="on",
                        help="off starts the services with OTEL_SDK_DISABLED=true (no spans at all)")
    parser.add_argument("--tls", choices=("on", "off"), default="on",
                        help="on (the default, as the cluster's): mutual TLS everywhere; off: an --insecure "
                             "cluster, plaintext (docs/perf/tls.md compares them)")
    parser.add_argument("--cpu-scheduling", choices=cpu_scheduling.CHOICES,
                        help="policy of every process of the run (default: $REPLOG_CPU_SCHEDULING, else realtime "
                             "in latency mode and batch in throughput mode)")
    args = parser.parse_args()
    acks = -1 if args.acks == "all" else int(args.acks)
    latency_mode = args.rate_mb_per_s > 0
    args.codecs = [codec.strip() for codec in args.compare.split(",")] if args.compare else []
    if args.compare:
        unknown = [codec for codec in args.codecs if codec not in CODECS]
        if unknown or len(set(args.codecs)) != len(args.codecs):
            parser.error(f"--compare takes distinct codecs of {', '.join(sorted(CODECS))}")
        if args.compression != "none":
            parser.error("--compare names the codecs: leave out --compression")
        if latency_mode or args.hops or args.profile or args.prefill_segments or args.rounds < 1:
            parser.error("--compare runs in throughput mode, with --rounds of at least 1 and without --hops, "
                         "--profile or --prefill-segments")
    args.payload = args.payload or ("json" if args.compare or args.compression != "none" else "random")
    os.environ[cpu_scheduling.ENV] = (args.cpu_scheduling or os.environ.get(cpu_scheduling.ENV)
                                      or ("realtime" if latency_mode else "batch"))
    policy = cpu_scheduling.configure()  # this process; the floors' and the cluster's inherit it
    args.max_in_flight = args.max_in_flight or (1 if latency_mode else 5)
    args.linger_ms = args.linger_ms if args.linger_ms >= 0 else (0 if latency_mode else 1)
    if args.hops and not (latency_mode and args.max_in_flight == 1):
        parser.error("--hops follows one request at a time: latency mode with --max-in-flight 1")
    args.json_pool = json_pool(args.record_size) if args.payload == "json" else []
    value_bytes_max = max([args.record_size, *map(len, args.json_pool)])
    fitting = (BATCH_BYTES_MAX - 4096) // (value_bytes_max + 24)  # the producer's per-record size estimate
    args.batch_records = min(args.batch_records or 8000, fitting)
    brokers = max(3, args.replication_factor)

    if args.prefill_segments:  # a run of a pair must not measure the other run's writeback
        harness.note(f"writeback drained after {harness.drain_writeback(600):.1f} s")
    harness.note("measuring the gRPC stream floor")
    floor = floor_grpc.floor_grpc_stream_mb_per_s()
    harness.note(f"floor: {floor:.0f} MB/s")
    round_trips = {}
    chain = None
    if latency_mode:  # one tick's records (what the producer hands over each millisecond) per message
        tick_bytes = max(1, int(args.rate_mb_per_s * 1000))
        for kind in ("sync", "aio"):
            round_trips[kind] = floor_grpc.floor_grpc_round_trip_ms(tick_bytes, kind) | {"message_bytes": tick_bytes}
        harness.note(f"round-trip floor: {round_trips}")
        if acks == -1 and args.replication_factor == 3:
            chain = floor_chain.measure(args.rate_mb_per_s, CHAIN_FLOOR_SECONDS)
            harness.note(f"acks=all chain floor: {chain}")
    env = {"OTEL_SDK_DISABLED": "true"} if args.tracing == "off" else {}
    hops_dir = Path(tempfile.mkdtemp(prefix="replog-bench-hops-")) if args.hops else None
    if hops_dir is not None:  # the services and this process (the producer) mark each hop
        env[hopmarks.ENV] = os.environ[hopmarks.ENV] = str(hops_dir)
    broker_args = args.broker_args.split()
    topic_configs = {"min.insync.replicas": str(min(2, args.replication_factor)),
                     **({"flush.messages": "1"} if args.durability == "durable" else {})}
    if args.segment_bytes > 0:
        topic_configs["segment.bytes"] = str(args.segment_bytes)
    if args.prefill_segments and not (latency_mode and args.segment_bytes >= 2 * int(args.rate_mb_per_s * 1000) + 200):
        parser.error("--prefill-segments needs latency mode and --segment-bytes of at least 2 ticks of records")
    window_configs = dict(topic_configs)  # what the measured window runs with
    if args.retention_bytes > 0:
        broker_args += ["--log-retention-check-interval-ms", str(args.retention_check_interval_ms)]
        window_configs["retention.bytes"] = str(args.retention_bytes)
        if not args.prefill_segments:
            topic_configs["retention.bytes"] = str(args.retention_bytes)
    if args.prefill_segments:
        window_configs.pop("segment.bytes", None)
        if args.retention_bytes <= 0:  # retention passes run in both runs of a pair; only one deletes
            broker_args += ["--log-retention-check-interval-ms", str(args.retention_check_interval_ms)]
    disk_waits: dict = {}

    def settle_disk(when: str, directory: Path) -> None:
        if args.disk_syncs_per_s_min > 0:
            disk_waits[when] = harness.wait_for_disk(directory, args.disk_syncs_per_s_min, args.disk_wait_s)
            harness.note(f"disk {when}: {disk_waits[when]}")

    settle_disk("before_start", Path(tempfile.gettempdir()))
    spec = ClusterSpec(controllers=1, brokers=brokers, gateways=0, extra_args={"broker": broker_args},
                       env=env, insecure=args.tls == "off")
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        assignment = harness.rotating_assignment(args.partitions, list(range(1, brokers + 1)),
                                                 args.replication_factor)
        payload = args.random_value = os.urandom(args.record_size)
        if args.compare:
            codecs = compare_codecs(cluster, args, acks, assignment, topic_configs)
            harness.emit({"mode": "compare", "codecs": codecs, "order": args.codecs, "rounds": args.rounds,
                          "records_per_run": args.records, "acks": args.acks, "durability": args.durability,
                          "record_size": args.record_size, "payload": args.payload,
                          "replication_factor": args.replication_factor, "partitions": args.partitions,
                          "batch_records": args.batch_records, "max_in_flight": args.max_in_flight,
                          "linger_ms": args.linger_ms, "tracing": args.tracing, "tls": args.tls,
                          "grpc_experiments": os.environ.get(grpc_runtime.ENV, ""), "cpu_scheduling": policy,
                          "floor_grpc_stream_mb_per_s": round(floor, 1)})
            return
        create_ready_topic(cluster, TOPIC, assignment, topic_configs, args.replication_factor)
        sync_bytes = max(1, int(args.rate_mb_per_s * 1000)) if latency_mode else args.batch_records * args.record_size
        fdatasync = floor_fdatasync.floor_fdatasync(cluster.data_dir(f"broker-{assignment[0][0]}"), sync_bytes)
        harness.note(f"fdatasync floor: {fdatasync}")
        producer = start_producer(cluster, args, acks, args.compression)
        # Warm up: metadata, connections, the first batches of every partition.
        for p in range(args.partitions):
            producer.send_batch(TOPIC, [payload] * WARM_UP_RECORDS, partition=p).result(timeout=30)
        if args.prefill_segments:
            prefill(producer, args, payload)
            rounds = harness.metric_by_broker(cluster, RETENTION_ROUNDS)
            harness.set_topic_config(cluster.zookeeper_endpoint, TOPIC, window_configs)
            # The window opens once every broker's checkpointer thread is through the prefill's rolled segments
            # and running retention passes again, and the kernel has written back what the prefill left dirty.
            harness.wait_until(lambda: all(v > rounds[b] for b, v in harness.metric_by_broker(
                cluster, RETENTION_ROUNDS).items()), 600, "a retention round on every broker after the prefill", 1.0)
            harness.note(f"writeback drained after {harness.drain_writeback(600):.1f} s")
            # ... and with every ISR whole again: the prefill outruns the followers (throughput mode), and a
            # window opened while they still catch up measured their catch-up and the ISR changes it causes.
            started = time.monotonic()
            harness.wait_until(lambda: not any(harness.metric_by_broker(cluster, UNDER_REPLICATED).values()), 600,
                               "every partition's ISR whole after the prefill", 1.0)
            harness.note(f"every ISR whole after {time.monotonic() - started:.1f} s")
        settle_disk("before_window", cluster.data_dir(f"broker-{assignment[0][0]}"))
        expected_s = args.seconds if latency_mode else max(5.0, args.records / 150_000)
        profilers = harness.start_profilers(args.profile, {
            "leader": cluster.processes[f"broker-{assignment[0][0]}"].pid,
            "follower": cluster.processes[f"broker-{assignment[0][1]}"].pid,
            "producer": os.getpid()}, expected_s) if args.profile else []
        cpu_before = harness.cpu_by_process(cluster, "bench-producer")
        what = f"{args.rate_mb_per_s:.0f} MB/s for {args.seconds:g} s" if latency_mode else f"{args.records} records"
        harness.note(f"producing ({what})")
        results, seconds = (drive_fixed_rate if latency_mode else drive_throughput)(producer, args, TOPIC)
        cpu_after = harness.cpu_by_process(cluster, "bench-producer")
        try:
            producer.close(timeout_s=30)
        except TimeoutError:
            pass  # counted in unacknowledged_records_at_deadline
        trimmed = trimmed_partitions(cluster) if args.retention_bytes > 0 or args.segment_bytes > 0 else None
        on_disk = log_bytes(cluster.data_dir(f"broker-{assignment[0][0]}"), TOPIC)
        for proc in profilers:
            proc.wait(timeout=60)
    hop_table = None
    if hops_dir is not None:  # read once the services have exited and written their marks
        hopmarks.flush()
        hop_table = hops.cycle_table(hops_dir)
        shutil.rmtree(hops_dir, ignore_errors=True)
    records_per_s = results.records / seconds if seconds > 0 else 0.0
    result = {
        "mode": "latency" if latency_mode else "throughput",
        "acks": args.acks,
        "durability": args.durability,
        "record_size": args.record_size,
        "compression": args.compression,
        "payload": args.payload,
        "bytes_on_disk": {"leader_log_bytes": on_disk,
                          "per_record": round(on_disk / results.records, 1) if results.records else None},
        "replication_factor": args.replication_factor,
        "partitions": args.partitions,
        "batch_records": None if latency_mode else args.batch_records,
        "max_in_flight": args.max_in_flight,
        "linger_ms": args.linger_ms,
        "offered_mb_per_s": args.rate_mb_per_s if latency_mode else None,
        "records": results.records,
        "seconds": round(seconds, 3),
        "records_per_s": round(records_per_s),
        "mb_per_s": round(records_per_s * args.record_size / 1_000_000, 2),
        "p50_ms": round(harness.percentile(results.latencies_ms, 0.50), 2),
        "p99_ms": round(harness.percentile(results.latencies_ms, 0.99), 2),
        "errors": len(results.errors),
        "unacknowledged_records_at_deadline": results.undelivered,
        "tracing": args.tracing,
        "tls": args.tls,
        "grpc_experiments": os.environ.get(grpc_runtime.ENV, ""),
        "cpu_scheduling": policy,
        "floor_grpc_stream_mb_per_s": round(floor, 1),
        "floor_fdatasync": fdatasync,
        **({"disk_settle": {"syncs_per_s_min": args.disk_syncs_per_s_min, **disk_waits}} if disk_waits else {}),
        **({"floor_grpc_stream_round_trip_ms": round_trips["sync"],
            "floor_grpc_aio_stream_round_trip_ms": round_trips["aio"]} if latency_mode else {}),
        **({"floor_acks_all_chain_ms": {"p50": chain["p50"], "p99": chain["p99"]}} if chain else {}),
        "cpu_s": harness.cpu_used(cpu_before, cpu_after),
        **({"tail": tail(results, GOAL_P99_MS_AT_10_MB_PER_S)} if latency_mode else {}),
        **({"hops": hop_table} if hop_table is not None else {}),
        **({"retention": {"retention_bytes": args.retention_bytes, "segment_bytes": args.segment_bytes,
                          "prefill_segments": args.prefill_segments,
                          "check_interval_ms": (args.retention_check_interval_ms
                                                if args.retention_bytes > 0 or args.prefill_segments else None),
                          "partitions_with_log_start_moved": trimmed}} if trimmed is not None else {}),
        "goal": ({"p99_ms_at_10_mb_per_s": GOAL_P99_MS_AT_10_MB_PER_S} if latency_mode
                 else {"records_per_s": GOAL_RECORDS_PER_S}),
    }
    if results.errors:
        harness.note(f"{len(results.errors)} batch(es) failed, first: {results.errors[0]}")
    harness.emit(result)


if __name__ == "__main__":
    main()
