"""`scale.py --idle`: what idle replicas cost one broker, in memory and in start-up time.

    .venv/bin/python bench/scale.py --idle --partitions 10000
    .venv/bin/python bench/scale.py --idle --partitions 100000

Starts its own cluster of one controller and ONE broker (no gateway), so that every partition has
one replica (RF 1) and `--partitions` replicas sit on that broker: the cheapest way to put 100,000
replicas on one broker of this machine. The partitions are spread over topics of at most
`--partitions-per-topic` (10,000 by default; each topic is one ZooKeeper transaction, as the
gateway's CreateTopics writes it). No record is written: the replicas are idle.

"Serving" is measured in three steps, each from the moment the broker process was spawned:

- `health_s`: its gRPC health says SERVING (what deploy/local's readiness gate and replog-healthcheck
  ask): it loaded its logs and registered in ZooKeeper;
- `leading_s`: LogService.DescribeReplicas lists every partition as led here (the controller's
  LeaderAndIsr for all of them was applied);
- `serving_s`: ListOffsets (latest) answers ERROR_CODE_NONE for every partition, asked in requests of
  `LIST_OFFSETS_CHUNK` partitions. This is the figure the goal (< 30 s) is about.

`cpu_s` is the CPU time (user + system) the broker process used from its spawn to serving: on a
shared machine whose run queue is long, the wall-clock times above mostly measure waiting for a core.

Points measured, in this order, in one run:

1. the floor: the empty broker's VmRSS, its clean restart (SIGTERM, controlled shutdown) and its
   unclean restart (kill -9) to serving, with no partitions;
2. topic creation: from the first ZooKeeper write to every partition led by the broker (`creation_s`);
   then the broker's VmRSS (`rss_after_creation_bytes`);
3. a clean restart (`clean`: `stop_s` is the SIGTERM-to-exit time) and the VmRSS once serving;
4. an unclean restart (`unclean`: kill -9 while idle), and the VmRSS once serving. The restarted
   broker registers only once ZooKeeper dropped its old session, so `health_s` includes up to a
   session timeout (`--zookeeper-session-timeout-ms`, 6 s in a local cluster).

`rss_per_replica_bytes` is the broker's VmRSS after creation over the replicas it hosts;
`rss_per_replica_bytes_above_empty` the same above the empty broker's; `after_clean_restart` has
both for the broker that loaded its replicas from disk. The figures: docs/perf/scale.md.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import harness

from kazoo.exceptions import ConnectionLoss

from replog.common import gc_policy
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec
from replog.v1 import log_pb2, log_pb2_grpc

TOPIC = "scale-idle"
BROKER = "broker-1"
LIST_OFFSETS_CHUNK = 10_000
RECEIVE_BYTES_MAX = 512 << 20
POLL_S = 0.1
ZK_SESSION_TIMEOUT_MS = 30_000
CREATE_ATTEMPTS = 5


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def topics_for(partitions: int, per_topic_max: int) -> dict[str, int]:
    """Topic name -> partition count: `partitions` in all, at most `per_topic_max` each."""
    topics, left = {}, partitions
    while left > 0:
        count = min(left, per_topic_max)
        topics[f"{TOPIC}-{len(topics)}"] = count
        left -= count
    return topics


class Probe:
    """Asks the broker whether it leads and answers for every partition of `topics`."""

    def __init__(self, cluster, topics: dict[str, int]) -> None:
        self.cluster, self.topics = cluster, topics
        self.total = sum(topics.values())

    def _stub(self):
        address = self.cluster.processes[BROKER].address
        channel = self.cluster.channel(address, [("grpc.max_receive_message_length", RECEIVE_BYTES_MAX)])
        return channel, log_pb2_grpc.LogServiceStub(channel)

    def leading(self) -> int:
        channel, stub = self._stub()
        with channel:
            reply = stub.DescribeReplicas(log_pb2.DescribeReplicasRequest(), timeout=120)
        return sum(1 for r in reply.replicas if r.leader and r.topic in self.topics)

    def answers_all(self) -> bool:
        wanted = [(t, p) for t, n in self.topics.items() for p in range(n)]
        channel, stub = self._stub()
        with channel:
            for start in range(0, len(wanted), LIST_OFFSETS_CHUNK):
                request = log_pb2.ListOffsetsRequest(partitions=[
                    log_pb2.ListOffsetsPartition(topic=t, partition=p, spec=log_pb2.OFFSET_SPEC_LATEST,
                                                 current_leader_epoch=-1)
                    for t, p in wanted[start:start + LIST_OFFSETS_CHUNK]])
                reply = stub.ListOffsets(request, timeout=120)
                if len(reply.partitions) != len(request.partitions) or any(r.error_code for r in reply.partitions):
                    return False
        return True


def until_serving(cluster, probe: Probe, spawned: float, timeout_s: float) -> dict[str, float]:
    """Wait through the three steps of serving (module docstring); seconds since `spawned` of each."""
    marks: dict[str, float] = {}
    deadline = spawned + timeout_s
    while True:
        if not cluster.is_running(BROKER):
            raise RuntimeError(f"{BROKER} exited while starting; last lines of its log:\n{cluster.tail(BROKER)}")
        if "health_s" not in marks:
            if cluster.healthy(BROKER):
                marks["health_s"] = round(time.monotonic() - spawned, 3)
                continue
        elif "leading_s" not in marks:
            if probe.leading() >= probe.total:
                marks["leading_s"] = round(time.monotonic() - spawned, 3)
                continue
        elif probe.answers_all():
            marks["serving_s"] = round(time.monotonic() - spawned, 3)
            return marks
        if time.monotonic() > deadline:
            raise TimeoutError(f"{BROKER} not serving {probe.total} partitions after {timeout_s:g} s: {marks}")
        time.sleep(POLL_S if "health_s" not in marks else 0.5)


def restart(cluster, probe: Probe, clean: bool, timeout_s: float) -> dict:
    """Stop the broker (SIGTERM, or kill -9), start it again, wait until it serves; the timings and its VmRSS."""
    stopping = time.monotonic()
    if clean:
        cluster.stop(BROKER, timeout_s=timeout_s)
    else:
        cluster.kill(BROKER)
    stop_s = time.monotonic() - stopping
    spawned = time.monotonic()
    cluster.start(BROKER)
    marks = until_serving(cluster, probe, spawned, timeout_s)
    pid = cluster.processes[BROKER].pid
    # CPU seconds the new process used up to serving: what the start-up costs whatever the machine's load
    return {"stop_s": round(stop_s, 3), **marks, "cpu_s": round(harness.cpu_seconds(pid), 2),
            "rss_bytes": rss_bytes(pid)}


def create_topic(zk: ZkClient, topic: str, partitions: int) -> None:
    """One transaction, asked again after a lost connection (on a loaded machine a large transaction can
    outlast the heartbeats) unless the topic is there already."""
    for attempt in range(CREATE_ATTEMPTS):
        try:
            harness.create_topic(zk, topic, {p: (1,) for p in range(partitions)})
            return
        except ConnectionLoss:
            harness.wait_until(lambda: zk.kazoo.connected, 120, "ZooKeeper to answer again", 0.5)
            if zk.kazoo.exists(schema.topic_path(topic)):
                return
    raise RuntimeError(f"creating {topic}: the connection was lost {CREATE_ATTEMPTS} times")


def idle_point(args) -> dict:
    topics = topics_for(args.partitions, args.partitions_per_topic)
    spec = ClusterSpec(controllers=1, brokers=1, gateways=0, env={gc_policy.ENV: args.gc})
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        if args.keep:
            harness.note(f"state (logs included) kept in {cluster.state_dir}")
        empty = Probe(cluster, {})
        harness.note("the floor: the empty broker's memory and restarts")
        empty_rss = rss_bytes(cluster.processes[BROKER].pid)
        floor_clean = restart(cluster, empty, clean=True, timeout_s=args.startup_timeout_s)
        floor_unclean = restart(cluster, empty, clean=False, timeout_s=args.startup_timeout_s)
        harness.note(f"floor: {empty_rss} B, clean {floor_clean}, unclean {floor_unclean}")

        harness.note(f"creating {args.partitions} partitions in {len(topics)} topics (RF 1)")
        probe = Probe(cluster, topics)
        creating = time.monotonic()
        zk = ZkClient(cluster.zookeeper_endpoint, session_timeout_ms=ZK_SESSION_TIMEOUT_MS)
        zk.start()
        try:
            for topic, count in topics.items():
                create_topic(zk, topic, count)
        finally:
            zk.stop()
        written_s = time.monotonic() - creating
        harness.wait_until(lambda: probe.leading() >= probe.total, args.startup_timeout_s * 10,
                           f"{BROKER} to lead {probe.total} partitions", 1.0)
        creation_s = time.monotonic() - creating
        created_rss = rss_bytes(cluster.processes[BROKER].pid)
        harness.note(f"created in {creation_s:.1f} s; VmRSS {created_rss} B")

        harness.note("clean restart")
        clean = restart(cluster, probe, clean=True, timeout_s=args.startup_timeout_s)
        harness.note(f"clean: {clean}")
        harness.note("unclean restart (kill -9)")
        unclean = restart(cluster, probe, clean=False, timeout_s=args.startup_timeout_s)
        harness.note(f"unclean: {unclean}")
        report = os.environ.get("REPLOG_HEAP_REPORT")
        if report:  # the broker's objects counted by type (replog.broker.runtime.diagnostics)
            cluster.signal(BROKER, signal.SIGUSR2)
            harness.wait_until(lambda: Path(report).exists(), 300, "the heap report", 1.0)
    n = args.partitions

    def per_replica(rss: int) -> dict:
        return {"rss_bytes": rss, "rss_per_replica_bytes": round(rss / n),
                "rss_per_replica_bytes_above_empty": round((rss - empty_rss) / n)}

    return {
        "mode": "idle",
        "partitions": n,
        "replicas_on_broker": n,
        "replication_factor": 1,
        "brokers": 1,
        "topics": len(topics),
        "gc": args.gc,
        "creation_s": round(creation_s, 3),
        "creation_zookeeper_writes_s": round(written_s, 3),
        **per_replica(created_rss),
        "after_clean_restart": per_replica(clean["rss_bytes"]),
        "after_unclean_restart": per_replica(unclean["rss_bytes"]),
        "clean": clean,
        "unclean": unclean,
        "serving_clean_s": clean["serving_s"],
        "serving_unclean_s": unclean["serving_s"],
        "floor": {"rss_bytes": empty_rss, "clean": floor_clean, "unclean": floor_unclean},
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
