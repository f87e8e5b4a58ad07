"""Log compaction benchmark: the cleaner's throughput, and what a running cleaner costs produce latency.

    .venv/bin/python bench/compaction.py

1. Cleaner throughput, in this process on a real on-disk log (no broker in the way): a compacted log
   of `--log-mb` MB of keyed records (`--keys` keys, 10% tombstones, `--value-bytes` each) in 1 MiB
   segments, cleaned by one unthrottled pass (replog.broker.log.cleaner.clean_log). Reported:
   cleaner_mb_per_s (the bytes of the segments it read, per second of the pass) and the floor in
   the same run, floor_decode_mb_per_s: reading and decoding the same segment files once, with no
   map, rewrite or swap (the work a pass cannot do without, done twice by it: map, then rewrite).
2. Produce p99 with and without the cleaner running, alternated: a local cluster (one controller,
   three brokers); a background producer writes keyed records at a steady `--background-rate` per
   second, in turns to a compacted topic (16 KiB segments, min.cleanable.dirty.ratio=0.01: the
   cleaners stay busy) and to a delete-policy topic laid out the same (the same load on the disks
   and the replication, no cleaning). Meanwhile one acks=all batch at a time goes to a third topic
   and its latency is recorded. `--rounds` rounds of two windows of `--window-s` seconds each,
   the order flipped every round; a window without the cleaner begins once the cleaners have finished
   what the previous window left dirty (their byte count still for 2 s). Reported: produce_p50/p99_ms with and without the cleaner, and
   the cleaner's bytes (replog_broker_cleaner_cleaned_bytes_total, all brokers) in each kind of
   window, which shows the cleaner did run in one and not the other.

The result is one JSON object, the last line of standard output.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.broker.log import LogConfig, PartitionLog  # noqa: E402
from replog.broker.log.cleaner import Throttle, clean_log  # noqa: E402
from replog.client import Producer  # noqa: E402
from replog.common.clock import SystemClock  # noqa: E402
from replog.common.records import decode_records, encode_batch  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import log_pb2, log_pb2_grpc  # noqa: E402

COMPACTED, DELETED, LATENCY = "bench-compacted", "bench-delete", "bench-latency"
CLEANED_BYTES = "replog_broker_cleaner_cleaned_bytes_total"


def measure_cleaner(args) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="replog-bench-compaction-"))
    try:
        config = LogConfig(segment_bytes=1 << 20, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
        log = PartitionLog.open(directory / "t-0", config, SystemClock())
        rng, now_ms = random.Random(60), int(time.time() * 1000)
        value = b"v" * args.value_bytes
        while log.size_bytes < args.log_mb * (1 << 20):
            records = [(b"key-%06d" % rng.randrange(args.keys), None if rng.random() < 0.1 else value, now_ms)
                       for _ in range(200)]
            log.append_as_leader(encode_batch(records), leader_epoch=0)
        log.flush()
        rolled_bytes = sum(s.size_bytes for s in log.cleanable_segments())
        started = time.monotonic()
        for path in sorted((directory / "t-0").glob("*.log"))[:-1]:
            decode_records(path.read_bytes())
        floor_s = time.monotonic() - started
        started = time.monotonic()
        result = clean_log(log, lambda step: step(), upper_offset=lambda: log.log_end_offset, now_ms=now_ms,
                           keys_max=1_000_000, throttle=Throttle(0, time.monotonic, time.sleep),
                           first_dirty_offset=0)
        pass_s = time.monotonic() - started
        log.close()
        return {"cleaner_mb_per_s": round(rolled_bytes / pass_s / 1e6, 2),
                "floor_decode_mb_per_s": round(rolled_bytes / floor_s / 1e6, 2),
                "cleaner_input_mb": round(rolled_bytes / 1e6, 2),
                "cleaner_output_mb": round(result.bytes_written / 1e6, 3),
                "cleaner_records_removed": result.records_removed}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def background_load(cluster, target: list[str], stop: threading.Event, rate: int) -> None:
    """Keyed records at `rate` per second to the topic named in `target[0]` (switched by the caller)."""
    rng = random.Random(7)
    with Producer([p.address for p in cluster.of_role("broker")], linger_ms=5) as producer:
        interval_s, next_s = 1.0 / rate, time.monotonic()
        while not stop.is_set():
            key = b"key-%04d" % rng.randrange(1000)
            producer.send(target[0], None if rng.random() < 0.1 else b"x" * 100, key=key)
            next_s += interval_s
            delay_s = next_s - time.monotonic()
            if delay_s > 0:
                time.sleep(delay_s)


def latency_window(stub, seconds: float) -> list[float]:
    latencies, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        batch = encode_batch([(None, b"p" * 100, int(time.time() * 1000))])
        started = time.monotonic()
        reply = stub.Produce(log_pb2.ProduceRequest(acks=-1, partitions=[log_pb2.ProducePartitionData(
            topic=LATENCY, partition=0, record_batch=batch)]), timeout=30)
        latencies.append(time.monotonic() - started)
        assert reply.partitions[0].error_code == 0, reply.partitions[0].error_message
    return latencies


def cleaned_bytes(cluster) -> float:
    return sum(harness.metric_by_broker(cluster, CLEANED_BYTES).values())


def wait_cleaners_idle(cluster, timeout_s: float = 120) -> None:
    """Until the cleaners' byte count stands still for 2 s (a condition, with a deadline)."""
    last = [cleaned_bytes(cluster), time.monotonic()]

    def idle() -> bool:
        now = cleaned_bytes(cluster)
        if now != last[0]:
            last[:] = [now, time.monotonic()]
        return time.monotonic() - last[1] >= 2.0

    harness.wait_until(idle, timeout_s, "the log cleaners to finish", interval_s=0.5)


def measure_produce(cluster, args) -> dict:
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        small = {"segment.bytes": "16384", "min.insync.replicas": "2"}
        harness.create_topic(zk, COMPACTED, {0: (1, 2, 3)}, {**small, "cleanup.policy": "compact",
                                                             "min.cleanable.dirty.ratio": "0.01"})
        harness.create_topic(zk, DELETED, {0: (1, 2, 3)}, {**small, "cleanup.policy": "delete"})
        harness.create_topic(zk, LATENCY, {0: (2, 3, 1)}, {"min.insync.replicas": "2"})
    finally:
        zk.stop()
    harness.wait_for_full_isrs(cluster.zookeeper_endpoint, {COMPACTED: 1, DELETED: 1, LATENCY: 1}, 3, 60,
                               "full ISRs")
    state = harness.read_states(cluster.zookeeper_endpoint, LATENCY, 1)[0]
    leader = next(p.address for p in cluster.of_role("broker") if p.instance_id == state.leader)
    channels = harness.channels(cluster)
    stub = log_pb2_grpc.LogServiceStub(channels.get(leader))
    target, stop = [DELETED], threading.Event()
    loader = threading.Thread(target=background_load, args=(cluster, target, stop, args.background_rate),
                              daemon=True)
    loader.start()
    latencies = {"with": [], "without": []}
    cleaned = {"with": 0.0, "without": 0.0}
    try:
        for round_number in range(args.rounds):
            order = ("with", "without") if round_number % 2 == 0 else ("without", "with")
            for kind in order:
                target[0] = COMPACTED if kind == "with" else DELETED
                if kind == "without":  # the cleaners finish what the last window made dirty first
                    wait_cleaners_idle(cluster)
                before = cleaned_bytes(cluster)
                latencies[kind] += latency_window(stub, args.window_s)
                cleaned[kind] += cleaned_bytes(cluster) - before
                harness.note(f"round {round_number} {kind} the cleaner: {len(latencies[kind])} produces so far")
    finally:
        stop.set()
        loader.join(60)
        channels.close()
    out = {}
    for kind in ("with", "without"):
        out[f"produce_p50_ms_{kind}_cleaner"] = round(harness.percentile(latencies[kind], 0.5) * 1000, 2)
        out[f"produce_p99_ms_{kind}_cleaner"] = round(harness.percentile(latencies[kind], 0.99) * 1000, 2)
        out[f"cleaned_mb_in_windows_{kind}_cleaner"] = round(cleaned[kind] / 1e6, 3)
        out[f"produces_{kind}_cleaner"] = len(latencies[kind])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log-mb", type=int, default=32)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--background-rate", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--window-s", type=float, default=8.0)
    args = parser.parse_args()
    harness.note("measuring the cleaner's throughput on a local log")
    result = measure_cleaner(args)
    harness.note(f"cleaner: {result}; starting a cluster")
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1, extra_args={"broker": [
        "--log-cleaner-backoff-ms", "100"]})
    with harness.local_cluster(spec) as cluster:
        result.update(measure_produce(cluster, args))
    result.update({"rounds": args.rounds, "window_s": args.window_s, "background_rate": args.background_rate})
    harness.emit(result)


if __name__ == "__main__":
    main()
