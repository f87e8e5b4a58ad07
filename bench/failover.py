"""Failover benchmark: kill -9 the broker that leads a third of the partitions and
measure how long until every moved partition accepts acks=all writes again.

    .venv/bin/python bench/failover.py --partitions 10000

Reported: moved_leaders; notice_to_writable_s (from the controller noticing the
loss, the start of its controller.broker_change span, to the last moved
partition acknowledging an acks=all write at its new leader); the controller's
phases from the same trace (decide, ZooKeeper writes, requests until every
broker answered); and floor_zk_multi_s, the time the same number of
partition-state writes take as raw pipelined ZooKeeper multis in this run.
The ZooKeeper session timeout (time to *notice*) is configuration, reported
separately as session_timeout_ms.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.common import records  # noqa: E402
from replog.common.channels import ChannelCache  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc  # noqa: E402

TOPIC = "failover-bench"


def produce_round(cluster, channels, states, pending: set[int], batch: bytes) -> set[int]:
    """One acks=all produce to each pending partition at its current leader; returns those that succeeded."""
    brokers = {int(p.name.split("-")[1]): p.address for p in cluster.of_role("broker")}
    by_leader: dict[int, list[int]] = {}
    for p in pending:
        state = states[p]
        if state is not None and state.leader in brokers:
            by_leader.setdefault(state.leader, []).append(p)
    calls = []
    for leader, partitions in by_leader.items():
        request = log_pb2.ProduceRequest(acks=-1, timeout_ms=5000, partitions=[
            log_pb2.ProducePartitionData(topic=TOPIC, partition=p, record_batch=batch) for p in partitions])
        stub = log_pb2_grpc.LogServiceStub(channels.get(brokers[leader]))
        calls.append(stub.Produce.future(request, timeout=10))
    done: set[int] = set()
    for call in calls:
        try:
            reply = call.result()
        except grpc.RpcError:
            continue
        done.update(r.partition for r in reply.partitions if r.error_code == common_pb2.ERROR_CODE_NONE)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--keep", action="store_true", help="keep the cluster's state directory for inspection")
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1, zookeeper_session_timeout_ms=args.session_timeout_ms,
                       extra_args={"broker": ["--replica-lag-time-max-ms", "30000"]})
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        harness.note(f"state in {cluster.state_dir}")
        zk = ZkClient(cluster.zookeeper_connect)
        zk.start()
        channels = ChannelCache()
        assignment = harness.rotating_assignment(args.partitions, [1, 2, 3], 3)
        harness.note(f"creating {args.partitions} partitions")
        harness.create_topic(zk, TOPIC, assignment, {"min.insync.replicas": "2"})
        harness.wait_until(lambda: all(s is not None and len(s.isr) == 3 for s in
                                       harness.read_states(cluster.zookeeper_connect, TOPIC, args.partitions)),
                           600, "every partition state")
        batch = records.encode_batch([(None, b"x" * 100, int(time.time() * 1000))])
        states = harness.read_states(cluster.zookeeper_connect, TOPIC, args.partitions)
        pending = set(range(args.partitions))
        harness.note("warming up: one acks=all write per partition")
        deadline = time.monotonic() + 600
        while pending and time.monotonic() < deadline:
            pending -= produce_round(cluster, channels, states, pending, batch)
        if pending:
            raise SystemExit(f"{len(pending)} partitions never accepted a write before the failover")
        moved = {p for p, s in enumerate(states) if s.leader == 1}
        floor_s = harness.zk_multi_floor_s(zk, len(moved))
        harness.note(f"killing broker-1, leader of {len(moved)} partitions")
        killed_at = time.time()
        cluster.signal("broker-1", signal.SIGKILL)
        pending = set(moved)
        last_success = None
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            states = harness.read_states(cluster.zookeeper_connect, TOPIC, args.partitions)
            done = produce_round(cluster, channels, states, pending, batch)
            if done:
                last_success = time.time()
                pending -= done
            else:
                time.sleep(0.02)
        if pending:
            raise SystemExit(f"{len(pending)} moved partitions not writable within 120 s")
        time.sleep(1.5)  # let the span processors flush
        spans = harness.read_span_files(cluster.trace_dir)
        roots = [s for s in spans if s["name"] == "controller.broker_change"
                 and 1 in (s["attributes"].get("brokers.dead") or [])]
        if not roots:
            raise SystemExit("no controller.broker_change span for broker 1 in the trace files")
        root = roots[-1]
        phases = {c["name"]: (c["end_ns"] - c["start_ns"]) / 1e9 for c in harness.children_of(spans, root)}
        noticed = root["start_ns"] / 1e9
        result = {
            "partitions": args.partitions,
            "moved_leaders": len(moved),
            "notice_to_writable_s": round(last_success - noticed, 3),
            "kill_to_notice_s": round(noticed - killed_at, 3),
            "session_timeout_ms": args.session_timeout_ms,
            "phases": {
                "decide_s": round(phases.get("controller.decide", 0), 4),
                "zookeeper_writes_s": round(phases.get("controller.zookeeper_write", 0), 4),
                "requests_until_brokers_done_s": round(phases.get("controller.send_requests", 0), 4),
                "controller_event_s": round((root["end_ns"] - root["start_ns"]) / 1e9, 4),
            },
            "floor_zk_multi_s": round(floor_s, 4),
        }
        zk.stop()
        channels.close()
    harness.emit(result)


if __name__ == "__main__":
    main()
