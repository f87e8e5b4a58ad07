"""Controller failover benchmark: kill -9 the active controller of a cluster with
many partitions; `seconds` runs from the standby winning the seat to every
broker having acknowledged its INIT LeaderAndIsr.

    .venv/bin/python bench/controller_failover.py --partitions 100000

Phases come from the new controller's `controller.failover` span: loading the
state (from the standby's copy when it has one, `standby_copy_used`; else
bulk reads in batched MultiReads), deciding, and the requests (INIT
LeaderAndIsr and full UpdateMetadata, each first as a digest;
`brokers_confirmed_by_digest` names the brokers that held the state already).
floor_zk_bulk_read_s is the raw cost, in this run, of reading the same znodes a
full load reads. The controller is killed once every ISR is full.

ZooKeeper keeps every znode in its heap: the server gets `--zookeeper-heap-mb`, by default 512 MB
plus 3 KB per partition (a server short of heap collects without end and every session it serves
times out; docs/perf/controller-million.md).
`rss_mb` is each process's resident memory when the controller is killed. The benchmark holds no
ZooKeeper session of its own while it waits: its polls read in bulk, on short sessions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from kazoo.exceptions import ConnectionLoss, SessionExpiredError  # noqa: E402

from replog.common.zk import bulk, schema  # noqa: E402
from replog.common.zk.session import ZkWireError  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

TOPIC = "controller-failover-bench"


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tolerant(poll):
    """A poll's answer, or False when ZooKeeper refused or dropped its short session: while the controller's
    writes queue at the server, a new session can be refused (the poll is simply made again)."""
    try:
        return poll()
    except ZkWireError as error:
        harness.note(f"a poll failed ({error}); polling again")
        return False


def create_topic(zk: ZkClient, topic: str, assignment: dict[int, tuple[int, ...]], attempts: int = 10) -> None:
    """`harness.create_topic`, again after a lost connection: while the controller writes the states of
    the topics before it, this session's heartbeats can go unanswered for longer than kazoo waits, and
    kazoo then drops the connection with the transaction in flight. Whether it was applied is read back."""
    for attempt in range(attempts):
        try:
            harness.create_topic(zk, topic, assignment)
            return
        except (ConnectionLoss, SessionExpiredError):
            harness.note(f"the connection dropped while creating {topic}; checking whether it was created")
            harness.wait_until(lambda: zk.kazoo.connected, 120, "ZooKeeper again", interval_s=0.5)
            try:
                if zk.kazoo.exists(schema.topic_path(topic)) is not None:
                    return
            except (ConnectionLoss, SessionExpiredError):
                continue
    raise RuntimeError(f"could not create {topic} in {attempts} attempts")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=100000)
    parser.add_argument("--topics", type=int, default=10, help="spread the partitions over this many topics")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--replication-factor", type=int, default=3, choices=(1, 2, 3))
    parser.add_argument("--zookeeper-heap-mb", type=int, default=0,
                        help="the ZooKeeper server's maximum heap; 0: 512 MB plus 3 KB per partition")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's state directory for inspection")
    args = parser.parse_args()
    # Brokers applying a 100K-partition LeaderAndIsr can starve their ZooKeeper heartbeat thread for
    # a few seconds (the GIL); with 3 s sessions they then expire and re-register in a loop. The
    # session timeout only affects how soon the standby notices, which `seconds` does not include.
    heap_mb = args.zookeeper_heap_mb or 512 + args.partitions * 3 // 1024
    spec = ClusterSpec(controllers=2, brokers=3, gateways=1, zookeeper_session_timeout_ms=args.session_timeout_ms,
                       zookeeper_heap_mb=heap_mb)
    per_topic = args.partitions // args.topics
    rf = args.replication_factor
    # Each broker hosts every partition at RF 3, a third of them at RF 1.
    per_broker = per_topic * args.topics * rf // 3
    started_setup = time.monotonic()
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        topics = [f"{TOPIC}-{i}" for i in range(args.topics)]
        harness.note(f"creating {per_topic * args.topics} partitions in {args.topics} topics, RF {rf}; "
                     f"ZooKeeper heap {heap_mb} MB")
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        try:
            for topic in topics:
                create_topic(zk, topic, harness.rotating_assignment(per_topic, [1, 2, 3], rf))
        finally:
            zk.stop()
        for topic in topics:
            harness.wait_until(lambda t=topic: tolerant(lambda: all(
                s is not None for s in harness.read_states(cluster.zookeeper_endpoint, t, per_topic))),
                3600, f"partition states of {topic}", interval_s=2)
        harness.note("all partition states exist; waiting for every broker to host every replica")
        harness.wait_until(lambda: all(harness.hosted(p.address) >= per_broker for p in cluster.of_role("broker")),
                           3600, "every broker to host its replicas", interval_s=5)
        harness.note("waiting for every ISR to be full, so the controller is killed in a settled cluster")
        harness.wait_until(lambda: tolerant(lambda: all(
            all(s is not None and len(s.isr) == rf for s in harness.read_states(cluster.zookeeper_endpoint, t, per_topic))
            for t in topics)), 3600, "full ISRs", interval_s=5)
        setup_s = time.monotonic() - started_setup
        paths = [schema.partition_state_path(t, p) for t in topics for p in range(per_topic)]
        started = time.monotonic()
        bulk.get_many(cluster.zookeeper_endpoint, paths)
        floor_s = time.monotonic() - started
        rss_mb = {p.name: rss_bytes(p.pid) >> 20 for p in cluster.processes.values()}
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        try:
            active = schema.ControllerRecord.decode(zk.get(schema.CONTROLLER)[0]).controller_id
        finally:
            zk.stop()
        harness.note(f"killing the active controller-{active}")
        cluster.kill(f"controller-{active}")
        standby = 2 if active == 1 else 1

        def finished():
            spans = harness.read_span_files(cluster.trace_dir)
            return [s for s in spans if s["name"] == "controller.failover"
                    and s["resource"].get("service.instance.id") == str(standby)] and spans

        spans = harness.wait_until(finished, 600, "the standby's controller.failover span")
        root = [s for s in spans if s["name"] == "controller.failover"
                and s["resource"].get("service.instance.id") == str(standby)][-1]
        children = {c["name"]: c for c in harness.children_of(spans, root)}
        won_ns = root["attributes"].get("controller.seat_won_at_ns") or root["start_ns"]
        sends = children.get("controller.send_requests")
        done_ns = sends["end_ns"] if sends else root["end_ns"]
        phase = lambda name: round((children[name]["end_ns"] - children[name]["start_ns"]) / 1e9, 3) \
            if name in children else None  # noqa: E731
        confirmed: dict[str, list[int]] = {}  # per request kind, the brokers that confirmed by digest
        for span in spans:
            if span["trace_id"] == root["trace_id"] and span["name"] in (
                    "controller.send.LeaderAndIsrRequest", "controller.send.UpdateMetadata"):
                brokers = confirmed.setdefault(span["name"].rsplit(".", 1)[1], [])
                if span["attributes"].get("state_digest_matched"):
                    brokers.append(span["attributes"]["broker.id"])
        result = {
            "partitions": per_topic * args.topics,
            "seconds": round((done_ns - won_ns) / 1e9, 3),
            "standby_copy_used": bool(children.get("controller.load_state", {}).get("attributes", {})
                                      .get("controller.standby_copy")),
            "brokers_confirmed_by_digest": {kind: sorted(b) for kind, b in confirmed.items()},
            "phases": {
                "seat_to_loop_s": round((root["start_ns"] - won_ns) / 1e9, 3),
                "watch_s": phase("controller.watch"),
                "load_state_s": phase("controller.load_state"),
                "decide_s": phase("controller.decide"),
                "zookeeper_writes_s": phase("controller.zookeeper_write"),
                "requests_until_brokers_done_s": phase("controller.send_requests"),
            },
            "floor_zk_bulk_read_s": round(floor_s, 3),
            "replication_factor": rf,
            "zookeeper_heap_mb": heap_mb,
            "rss_mb": rss_mb,
            "setup_s": round(setup_s, 1),
        }
    harness.emit(result)


if __name__ == "__main__":
    main()
