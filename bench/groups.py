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
2. Rebalance: three GroupConsumers share the topic; one stops heartbeating and polling without
   leaving (as a killed process); reported: rebalance_after_death_s, from the death until the two
   others own every partition between them (the goal: the session timeout plus at most 1 s), and
   session_timeout_s.

The result is one JSON object, the last line of standard output.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.client import GroupConsumer  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import group_pb2, group_pb2_grpc  # noqa: E402

TOPIC = "bench-groups"


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


def committer(cluster, channels, index: int, args, stop: threading.Event, out: list) -> None:
    group_id = f"bench-{index}"
    any_broker = cluster.of_role("broker")[0].address
    found = group_pb2_grpc.GroupServiceStub(channels.get(any_broker)).FindCoordinator(
        group_pb2.FindCoordinatorRequest(group_id=group_id), timeout=30)
    stub = group_pb2_grpc.GroupServiceStub(channels.get(f"{found.coordinator.host}:{found.coordinator.port}"))
    member_id, generation_id = harness.wait_until(lambda: _try_join(stub, group_id), 60, f"{group_id} to form")
    latencies, offset = [], 0
    while not stop.is_set():
        offset += 1
        request = group_pb2.OffsetCommitRequest(group_id=group_id, generation_id=generation_id, member_id=member_id,
                                                partitions=[group_pb2.OffsetCommitPartition(
                                                    topic=TOPIC, partition=p % args.partitions, offset=offset)
                                                    for p in range(args.partitions_per_commit)])
        started = time.perf_counter()
        reply = stub.OffsetCommit(request, timeout=30)
        latencies.append(time.perf_counter() - started)
        assert reply.error_code == 0, reply.error_message
    out.append(latencies)


def _try_join(stub, group_id: str):
    try:
        return join_alone(stub, group_id)
    except AssertionError:
        return None


def measure_commits(cluster, args) -> dict:
    channels = harness.channels(cluster)
    stop, out = threading.Event(), []
    threads = [threading.Thread(target=committer, args=(cluster, channels, i, args, stop, out))
               for i in range(args.committers)]
    for t in threads:
        t.start()
    time.sleep(args.warm_up_s)  # the committers join their groups and warm up before the window opens
    window_start = time.monotonic()
    time.sleep(args.commit_seconds)
    stop.set()
    for t in threads:
        t.join(60)
    elapsed = time.monotonic() - window_start
    latencies = sorted(x for each in out for x in each)
    calls = len(latencies)
    channels.close()
    return {"commit_calls_per_s": round(calls / elapsed, 1),
            "offsets_committed_per_s": round(calls * args.partitions_per_commit / elapsed, 1),
            "commit_latency_ms_p50": round(harness.percentile(latencies, 0.5) * 1000, 2),
            "commit_latency_ms_p99": round(harness.percentile(latencies, 0.99) * 1000, 2),
            "committers": args.committers, "partitions_per_commit": args.partitions_per_commit}


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
        owned = [tp for i in indexes for tp in members[i].assignment]
        return len(owned) == args.partitions and len(set(owned)) == args.partitions

    harness.wait_until(lambda: covered([0, 1, 2]) and all(m.assignment for m in members), 60, "three members to share")
    running[2] = False
    threads[2].join(10)
    members[2]._membership._stop.set()  # heartbeats stop; it never leaves
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
    parser.add_argument("--warm-up-s", type=float, default=8.0)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1)
    with harness.local_cluster(spec) as cluster:
        from replog.cli.main import main as cli

        for topic, partitions in (("__consumer_offsets", args.offsets_partitions), (TOPIC, args.partitions)):
            code = cli(["--gateway", cluster.gateway_address, "-o", "json", "topics", "create", topic,
                        "--partitions", str(partitions), "--replication-factor", "3"])
            assert code == 0
        harness.wait_for_full_isrs(cluster.zookeeper_endpoint, {"__consumer_offsets": args.offsets_partitions,
                                                                TOPIC: args.partitions}, 3, 60, "full ISRs")
        harness.note("measuring commits")
        result = measure_commits(cluster, args)
        harness.note(f"commits: {result}; measuring a rebalance after a member dies")
        result.update(measure_rebalance(cluster, args))
    harness.emit(result)


if __name__ == "__main__":
    main()
