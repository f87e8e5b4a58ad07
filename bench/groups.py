"""Consumer groups benchmark: offset commits per second through the API, and how long a 3-member
group takes to rebalance after a member dies.

    .venv/bin/python bench/groups.py

Starts a local cluster (ZooKeeper, one controller, three brokers, one gateway), creates
`__consumer_offsets` (`--offsets-partitions`, 3 replicas) and a topic of `--partitions` partitions.

1. Commits: `--committers` threads, each a member of its own group (joined through the API, so
   the commits pass the generation check), call OffsetCommit for `--commit-seconds` seconds, each
   call storing `--partitions-per-commit` offsets (a consumer commits all its partitions in one
   call, as Kafka's does). Reported: offsets_committed_per_s (the goal: at least 20,000) and
   commit_calls_per_s, with the p50 and p99 latency of a call. Every commit is an acks=all append
   to the offsets partition on the coordinator.
   The floor, in the same run: as many threads call LogService.Produce (acks=all) on a topic laid
   out as `__consumer_offsets` (same partition count, 3 replicas), each call one batch of the very
   records a commit appends (the coordinator's own key and value encoding), thread i on partition
   i modulo the partition count. Reported: floor_produce_calls_per_s and commit_to_floor_ratio,
   the share of the bare replicated append's rate that the group path keeps.
2. Rebalance: three GroupConsumers share the topic; one stops heartbeating and polling without
   leaving (as a killed process); reported: rebalance_after_death_s, from the death until the two
   others own every partition between them (the goal: the session timeout plus at most 1 s), and
   session_timeout_s.

The result is one JSON object, the last line of standard output.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.broker.groups.core.model import CommittedOffset  # noqa: E402
from replog.broker.groups.core.records import offset_key, offset_value  # noqa: E402
from replog.client import GroupConsumer  # noqa: E402
from replog.common.core.partitions import TopicPartition  # noqa: E402
from replog.common.records.builder import encode_batch  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import group_pb2, group_pb2_grpc, log_pb2, log_pb2_grpc  # noqa: E402

TOPIC = "bench-groups"
FLOOR_TOPIC = "bench-groups-floor"


def join_alone(stub: group_pb2_grpc.GroupServiceStub, group_id: str) -> tuple[str, int]:
    answer = stub.JoinGroup(group_pb2.JoinGroupRequest(
        group_id=group_id, client_id="bench", session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
        protocol_type="consumer", protocols=[group_pb2.GroupProtocol(name="range", topics=[TOPIC])]), timeout=60)
    assert answer.error_code == 0, answer.error_message
    synced = stub.SyncGroup(group_pb2.SyncGroupRequest(
        group_id=group_id, generation_id=answer.generation_id, member_id=answer.member_id,
        assignments=[group_pb2.MemberAssignment(member_id=answer.member_id)]), timeout=60)
    assert synced.error_code == 0, synced.error_message
    return answer.member_id, answer.generation_id


def committer(cluster, channels, index: int, args):
    """Join group bench-<index> alone; return the call that commits `partitions_per_commit` offsets."""
    group_id = f"bench-{index}"
    any_broker = cluster.of_role("broker")[0].address
    found = group_pb2_grpc.GroupServiceStub(channels.get(any_broker)).FindCoordinator(
        group_pb2.FindCoordinatorRequest(group_id=group_id), timeout=30)
    stub = group_pb2_grpc.GroupServiceStub(channels.get(f"{found.coordinator.host}:{found.coordinator.port}"))
    member_id, generation_id = harness.wait_until(lambda: _try_join(stub, group_id), 60, f"{group_id} to form")
    offset = itertools.count(1)

    def commit() -> None:
        at = next(offset)
        reply = stub.OffsetCommit(group_pb2.OffsetCommitRequest(
            group_id=group_id, generation_id=generation_id, member_id=member_id,
            partitions=[group_pb2.OffsetCommitPartition(topic=TOPIC, partition=p % args.partitions, offset=at)
                        for p in range(args.partitions_per_commit)]), timeout=30)
        assert reply.error_code == 0, reply.error_message
    return commit


def _try_join(stub, group_id: str):
    try:
        return join_alone(stub, group_id)
    except AssertionError:
        return None


def floor_producer(cluster, channels, index: int, args):
    """The call that appends the records of one commit of group bench-<index> with Produce, acks=all."""
    partition = index % args.offsets_partitions
    state = harness.read_states(cluster.zookeeper_endpoint, FLOOR_TOPIC, args.offsets_partitions)[partition]
    leader = next(p.address for p in cluster.of_role("broker") if p.instance_id == state.leader)
    stub = log_pb2_grpc.LogServiceStub(channels.get(leader))
    group_id, offset = f"bench-{index}", itertools.count(1)

    def produce() -> None:
        at, now_ms = next(offset), int(time.time() * 1000)
        records = [(offset_key(group_id, TopicPartition(TOPIC, p % args.partitions)),
                    offset_value(CommittedOffset(at, 0, "", now_ms)), now_ms)
                   for p in range(args.partitions_per_commit)]
        reply = stub.Produce(log_pb2.ProduceRequest(acks=-1, partitions=[log_pb2.ProducePartitionData(
            topic=FLOOR_TOPIC, partition=partition, record_batch=encode_batch(records))]), timeout=30)
        assert reply.partitions[0].error_code == 0, reply.partitions[0].error_message
    return produce


def timed_calls(cluster, prepare, args) -> tuple[float, list[float]]:
    """`args.committers` threads, each looping on the call `prepare` returns; once every thread is
    prepared and `warm_up_s` has passed, a window of `commit_seconds` opens: (its length, the latency
    of each call that ended inside it)."""
    channels = harness.channels(cluster)
    stop, ready, out = threading.Event(), [], []

    def worker(index: int) -> None:
        call, ended = prepare(cluster, channels, index, args), []
        ready.append(index)
        while not stop.is_set():
            started = time.monotonic()
            call()
            ended.append((time.monotonic(), time.monotonic() - started))
        out.append(ended)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.committers)]
    for t in threads:
        t.start()
    harness.wait_until(lambda: len(ready) == args.committers, 90, "every thread to be ready")
    time.sleep(args.warm_up_s)  # a warm-up with a fixed length, not a wait for a condition: no condition to test
    window_start = time.monotonic()
    time.sleep(args.commit_seconds)
    window_end = time.monotonic()
    stop.set()
    for t in threads:
        t.join(60)
    channels.close()
    latencies = sorted(took for each in out for at, took in each if window_start <= at <= window_end)
    return window_end - window_start, latencies


def measure_commits(cluster, args) -> dict:
    elapsed, latencies = timed_calls(cluster, committer, args)
    calls = len(latencies)
    return {"commit_calls_per_s": round(calls / elapsed, 1),
            "offsets_committed_per_s": round(calls * args.partitions_per_commit / elapsed, 1),
            "commit_latency_ms_p50": round(harness.percentile(latencies, 0.5) * 1000, 2),
            "commit_latency_ms_p99": round(harness.percentile(latencies, 0.99) * 1000, 2),
            "committers": args.committers, "partitions_per_commit": args.partitions_per_commit}


def measure_floor(cluster, args) -> dict:
    """The bare acks=all append of a commit's records, as many threads as committers."""
    elapsed, latencies = timed_calls(cluster, floor_producer, args)
    return {"floor_produce_calls_per_s": round(len(latencies) / elapsed, 1),
            "floor_latency_ms_p50": round(harness.percentile(latencies, 0.5) * 1000, 2),
            "floor_latency_ms_p99": round(harness.percentile(latencies, 0.99) * 1000, 2)}


def measure_rebalance(cluster, args) -> dict:
    bootstrap = [p.address for p in cluster.of_role("broker")]
    members = [GroupConsumer(bootstrap, TOPIC, group_id="bench-rebalance", session_timeout_ms=args.session_timeout_ms,
                             heartbeat_interval_ms=args.session_timeout_ms // 3, max_wait_ms=100,
                             enable_auto_commit=False) for _ in range(3)]
    running = [True, True, True]

    def pump(i: int) -> None:
        while running[i]:
            members[i].poll(100)

    threads = [threading.Thread(target=pump, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()

    def covered(indexes) -> bool:
        owned = [tp for i in indexes for tp in members[i].assignment()]
        return len(owned) == args.partitions and len(set(owned)) == args.partitions

    harness.wait_until(lambda: covered([0, 1, 2]) and all(m.assignment() for m in members), 60, "three members to share")
    running[2] = False
    threads[2].join(10)
    members[2]._group._membership._stop.set()  # heartbeats stop; it never leaves
    died = time.monotonic()
    harness.wait_until(lambda: covered([0, 1]), args.session_timeout_ms / 1000 + 30, "the survivors to take over",
                       interval_s=0.02)
    took = time.monotonic() - died
    running[0] = running[1] = False
    for i in (0, 1):
        threads[i].join(10)
        members[i].close()
    return {"rebalance_after_death_s": round(took, 2), "session_timeout_s": args.session_timeout_ms / 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offsets-partitions", type=int, default=6)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--committers", type=int, default=8)
    parser.add_argument("--partitions-per-commit", type=int, default=12)
    parser.add_argument("--commit-seconds", type=float, default=10.0)
    parser.add_argument("--warm-up-s", type=float, default=3.0)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1)
    with harness.local_cluster(spec) as cluster:
        from replog.cli.main import main as cli

        topics = {"__consumer_offsets": args.offsets_partitions, TOPIC: args.partitions,
                  FLOOR_TOPIC: args.offsets_partitions}
        for topic, partitions in topics.items():
            code = cli(["--gateway", cluster.gateway_address, "-o", "json", "topics", "create", topic,
                        "--partitions", str(partitions), "--replication-factor", "3"])
            assert code == 0
        harness.wait_for_full_isrs(cluster.zookeeper_endpoint, topics, 3, 60, "full ISRs")
        harness.note("measuring the floor: the same records through Produce")
        result = measure_floor(cluster, args)
        harness.note(f"floor: {result}; measuring commits")
        result.update(measure_commits(cluster, args))
        result["commit_to_floor_ratio"] = round(result["commit_calls_per_s"] / result["floor_produce_calls_per_s"], 3)
        harness.note(f"commits: {result}; measuring a rebalance after a member dies")
        result.update(measure_rebalance(cluster, args))
    harness.emit(result)


if __name__ == "__main__":
    main()
