"""Benchmark: the speed a user of the client library gets, against its floors (issue 42).

    .venv/bin/python bench/client.py
    .venv/bin/python bench/client.py --latency-policies      # batch, normal, realtime back to back

Starts its own local cluster (ZooKeeper, one controller, three brokers) and a topic of 6
partitions, RF 3, min.insync.replicas 2; 100-byte values, acks=all, idempotent. One JSON object:

- producer_records_per_s: `Producer.send(topic, value)` in a loop of `--records`, then `flush()`,
  from one thread. Its floors, same run: floor_build_records_per_s, a Python loop that only
  builds the same records (key, value, timestamp) and drops them; floor_send_batch_records_per_s,
  the broker's own rate through `send_batch` (8,000 records a call, as bench/produce.py drives it).
- consumer_records_per_s: a Consumer over those records, iterated (`for record in consumer`) until
  it has seen them all. Its floor, floor_raw_fetch_records_per_s: Fetch requests on this thread, one
  in flight per leader as the consumer keeps them, that decode nothing (batch headers only).
- latency_ms (unless --no-latency): p50 / p99 from `send()` to a Consumer in another process seeing
  the record, at `--rate-mb-per-s` (10), under the services' default CPU policy; with
  --latency-policies, batch, normal and realtime alternated back to back, `--rounds` times each,
  the cluster restarted under each policy (every process of a run shares its policy).
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import time
from pathlib import Path

from replog.common import cpu_scheduling, grpc_runtime

grpc_runtime.configure()  # before grpc loads: this process runs gRPC as the services do

sys.path.insert(0, str(Path(__file__).resolve().parent))

import client_latency  # noqa: E402
import harness  # noqa: E402

from replog.client import Consumer, Producer  # noqa: E402
from replog.common import records as rec  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import log_pb2  # noqa: E402

TOPIC = "client-bench"
PARTITIONS = 6
RECORD_BYTES = 100
SEND_BATCH_RECORDS = 8000
GOALS = {"producer_records_per_s": 300_000, "consumer_records_per_s": 940_000, "latency_p99_ms": 10.0}


def start_cluster(policy: str):
    os.environ[cpu_scheduling.ENV] = policy
    cpu_scheduling.configure()
    return harness.local_cluster(ClusterSpec(controllers=1, brokers=3, gateways=0))


def create_topic(cluster, topic: str) -> list[str]:
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        harness.create_topic(zk, topic, harness.rotating_assignment(PARTITIONS, [1, 2, 3], 3),
                             {"min.insync.replicas": "2"})
    finally:
        zk.stop()
    endpoint = cluster.zookeeper_endpoint
    harness.wait_until(lambda: all(s is not None and s.leader >= 0 and len(s.isr) == 3
                                   for s in harness.read_states(endpoint, topic, PARTITIONS)), 60, "partition leaders")
    return [p.address for p in cluster.of_role("broker")]


def floor_build(values: list[bytes]) -> float:
    started = time.perf_counter()
    for value in values:
        record = (None, value, int(time.time() * 1000))
    del record
    return len(values) / (time.perf_counter() - started)


def measure_send(producer: Producer, values: list[bytes]) -> float:
    started = time.perf_counter()
    send = producer.send
    for value in values:
        send(TOPIC, value)
    producer.flush(120)
    return len(values) / (time.perf_counter() - started)


def measure_send_batch(producer: Producer, values: list[bytes]) -> float:
    started = time.perf_counter()
    pending = []
    for n, start in enumerate(range(0, len(values), SEND_BATCH_RECORDS)):
        pending.append(producer.send_batch(TOPIC, values[start:start + SEND_BATCH_RECORDS], partition=n % PARTITIONS))
        if len(pending) > 3 * PARTITIONS:
            pending.pop(0).result(120)
    producer.flush(120)
    return len(values) / (time.perf_counter() - started)


def measure_consumer(bootstrap: list[str], total: int) -> float:
    with Consumer(bootstrap, TOPIC) as consumer:
        started = time.perf_counter()
        seen = 0
        for _ in consumer:
            seen += 1
            if seen == total:
                break
        return total / (time.perf_counter() - started)


def floor_raw_fetch(bootstrap: list[str], total: int) -> float:
    """One Fetch in flight per leader, reissued as each answers, reading batch headers only: the
    consumer's fetching with no decoding, no buffer and no thread hand-off."""
    with Consumer(bootstrap, TOPIC) as consumer:  # for its metadata and channels only
        metadata = consumer.metadata
        positions = {p: 0 for p in range(PARTITIONS)}
        by_leader: dict[str, list[int]] = {}
        for p in range(PARTITIONS):
            by_leader.setdefault(metadata.leader_address(TOPIC, p)[0], []).append(p)
        stubs = {address: metadata.stub(address) for address in by_leader}
        answers: queue.SimpleQueue = queue.SimpleQueue()

        def fetch(address: str) -> None:
            request = log_pb2.FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=4 * 1024 * 1024, partitions=[
                log_pb2.FetchPartition(topic=TOPIC, partition=p, fetch_offset=positions[p], current_leader_epoch=-1)
                for p in by_leader[address]])
            stubs[address].Fetch.future(request, timeout=10).add_done_callback(lambda f: answers.put((address, f)))

        started = time.perf_counter()
        for address in by_leader:
            fetch(address)
        seen = 0
        while seen < total:
            address, call = answers.get(timeout=30)
            for data in call.result().partitions:
                for _, header in rec.iter_batches(data.records):
                    seen += header.next_offset - max(header.base_offset, positions[data.partition])
                    positions[data.partition] = header.next_offset
            fetch(address)
        return total / (time.perf_counter() - started)


def throughput(args) -> dict:
    values = [b"%0*d" % (RECORD_BYTES, i) for i in range(args.records)]
    with start_cluster(cpu_scheduling.choice()) as cluster:
        bootstrap = create_topic(cluster, TOPIC)
        result: dict = {"floor_build_records_per_s": [], "producer_records_per_s": [],
                        "floor_send_batch_records_per_s": [], "consumer_records_per_s": [],
                        "floor_raw_fetch_records_per_s": []}
        with Producer(bootstrap, acks="all", idempotent=True) as producer:
            for _ in range(args.rounds):  # alternated, so each ratio holds on a busy machine
                result["floor_build_records_per_s"].append(floor_build(values))
                result["producer_records_per_s"].append(measure_send(producer, values))
                result["floor_send_batch_records_per_s"].append(measure_send_batch(producer, values))
                harness.note(f"produce: { {k: round(v[-1]) for k, v in result.items() if v} }")
        total = 2 * args.rounds * args.records
        for _ in range(args.rounds):
            result["consumer_records_per_s"].append(measure_consumer(bootstrap, total))
            result["floor_raw_fetch_records_per_s"].append(floor_raw_fetch(bootstrap, total))
            harness.note(f"consume: {round(result['consumer_records_per_s'][-1])} against "
                         f"{round(result['floor_raw_fetch_records_per_s'][-1])}")
    out = {name: {"runs": [round(v) for v in runs], "median": round(statistics.median(runs))}
           for name, runs in result.items()}
    for name, floor in (("producer_records_per_s", "floor_send_batch_records_per_s"),
                        ("consumer_records_per_s", "floor_raw_fetch_records_per_s")):
        out[name]["ratio_to_" + floor] = round(out[name]["median"] / out[floor]["median"], 3)
    out["producer_records_per_s"]["ratio_to_floor_build_records_per_s"] = round(
        out["producer_records_per_s"]["median"] / out["floor_build_records_per_s"]["median"], 4)
    return out


def latency(args, policy: str) -> dict:
    with start_cluster(policy) as cluster:
        bootstrap = create_topic(cluster, TOPIC)
        return client_latency.measure(bootstrap, TOPIC, args.rate_mb_per_s, args.seconds, RECORD_BYTES,
                                      linger_ms=args.linger_ms, max_in_flight=args.max_in_flight)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate-mb-per-s", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--linger-ms", type=int, default=0, help="the latency run's producer linger")
    parser.add_argument("--max-in-flight", type=int, default=1, help="the latency run's producer requests in flight")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--latency-policies", action="store_true",
                        help="batch, normal and realtime alternated back to back, --rounds times")
    args = parser.parse_args()
    result: dict = {"goals": GOALS, "records": args.records, "record_bytes": RECORD_BYTES, "partitions": PARTITIONS,
                    "replication_factor": 3, "acks": "all", "idempotent": True,
                    "default_cpu_scheduling": cpu_scheduling.DEFAULT}
    if not args.no_throughput:
        result |= throughput(args)
    if not args.no_latency:
        policies = ["batch", "normal", "realtime"] if args.latency_policies else [cpu_scheduling.choice()]
        runs: dict[str, list[dict]] = {p: [] for p in policies}
        for _ in range(args.rounds if args.latency_policies else 1):
            for policy in policies:
                runs[policy].append(latency(args, policy))
                harness.note(f"latency under {policy}: {runs[policy][-1]}")
        result["latency_ms"] = {p: {"runs": r, "p50_median": statistics.median(x["p50_ms"] for x in r),
                                    "p99_median": statistics.median(x["p99_ms"] for x in r)}
                                for p, r in runs.items()}
    harness.emit(result)


if __name__ == "__main__":
    main()
