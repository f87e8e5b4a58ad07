"""Controlled shutdown benchmark: SIGTERM the broker leading a third of the
partitions; it asks the controller to move its leaderships away before it exits.
`seconds` is from its request to the reply (its `broker.controlled_shutdown`
span, retries included), which the controller sends once the new states are
written and every broker has acknowledged its requests.

    .venv/bin/python bench/controlled_shutdown.py --partitions 10000

Also reported: the controller's phases from its trace, and floor_zk_multi_s,
the raw ZooKeeper cost of the same number of state writes in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

TOPIC = "shutdown-bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--keep", action="store_true", help="keep the cluster's state directory for inspection")
    parser.add_argument("--profile", metavar="DIR", help="record py-spy profiles of the brokers and the controller "
                                                         "during the shutdown")
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1)
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        harness.note(f"creating {args.partitions} partitions")
        harness.create_topic(zk, TOPIC, harness.rotating_assignment(args.partitions, [1, 2, 3], 3))
        harness.wait_for_full_isrs(cluster.zookeeper_endpoint, {TOPIC: args.partitions}, 3, 600,
                                   "every partition state")
        harness.wait_until(lambda: all(harness.hosted(p.address) >= args.partitions for p in cluster.of_role("broker")),
                           600, "every broker to host its replicas", interval_s=1)
        # Busy creating replicas, followers may have fallen out of an ISR for a while; a partition
        # whose ISR is broker 1 alone cannot be handed over, so wait until every ISR is full again.
        harness.wait_for_full_isrs(cluster.zookeeper_endpoint, {TOPIC: args.partitions}, 3, 600,
                                   "every ISR to be full again", interval_s=1)
        states = harness.read_states(cluster.zookeeper_endpoint, TOPIC, args.partitions)
        led = sum(1 for s in states if s.leader == 1)
        floor_s = harness.zk_multi_floor_s(zk, led)
        profilers = harness.start_profilers(args.profile, {
            name: cluster.processes[name].pid for name in ("broker-1", "broker-2", "broker-3", "controller-1")}, 8) \
            if args.profile else []
        if profilers:
            time.sleep(2)  # py-spy needs a moment to attach
        harness.note(f"broker 1 leads {led} partitions; stopping it with SIGTERM (controlled shutdown)")
        cluster.stop("broker-1", timeout_s=60)
        for proc in profilers:
            proc.wait(timeout=60)
        time.sleep(1.0)  # the controller's span processor flushes every 0.5 s
        after = harness.read_states(cluster.zookeeper_endpoint, TOPIC, args.partitions)
        still = sum(1 for s in after if s.leader == 1)
        spans = harness.read_span_files(cluster.trace_dir)
        asked = [s for s in spans if s["name"] == "broker.controlled_shutdown" and s["attributes"].get("broker.id") == 1]
        if not asked:
            raise SystemExit("no broker.controlled_shutdown span from broker 1 in the trace files")
        asked = asked[-1]
        handled = [s for s in spans if s["name"] == "controller.controlled_shutdown"
                   and s["attributes"].get("broker.id") == 1 and s["start_ns"] >= asked["start_ns"]]
        phases = {}
        if handled:
            phases = {c["name"]: round((c["end_ns"] - c["start_ns"]) / 1e9, 4)
                      for c in harness.children_of(spans, handled[0])}
        result = {
            "partitions": args.partitions,
            "leaders_moved": led - still,
            "attempts": asked["attributes"].get("attempts"),
            "gave_up": bool(asked["attributes"].get("gave_up")),
            "seconds": round((asked["end_ns"] - asked["start_ns"]) / 1e9, 3),
            "controller_phases_s": {
                "decide": phases.get("controller.decide"),
                "zookeeper_writes": phases.get("controller.zookeeper_write"),
                "requests_until_brokers_done": phases.get("controller.send_requests"),
            },
            "floor_zk_multi_s": round(floor_s, 4),
            "goal_s": 1.0,
        }
        zk.stop()
    harness.emit(result)


if __name__ == "__main__":
    main()
