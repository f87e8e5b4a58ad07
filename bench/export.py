"""Benchmark: export a large topology to Parquet through the gateway.

    .venv/bin/python bench/export.py --partitions 100000

Starts ZooKeeper, three brokers and a gateway (no controller: this script
writes the topics and partition states itself, in kazoo transactions of
1,000 operations, as the controller would), then times `replog export
--format parquet` end to end (a fresh CLI process reading the gateway's
ExportTopology stream and writing the files). The floor, measured in the same
run, is the bulk read (batched MultiReads) of the same znodes the gateway has to read
(children, assignments, configs, states), with no decoding and no gRPC. The
last stdout line is one JSON object: seconds, partitions, floor_seconds, goal.
Goal (issue 5): under 10 s for 100,000 partitions.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from replog.common.zk import bulk, schema
from replog.common.zk.auth import ZkEndpoint
from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec, LocalCluster

TRANSACTION_OPS = 1_000
GOAL_SECONDS = 10.0
BROKERS = 3


def write_topology(zk: ZkClient, topics: int, partitions_per_topic: int) -> list[str]:
    """Topics with RF 3, leaders spread round robin; every 97th partition offline, every 13th under-replicated."""
    kazoo = zk.kazoo
    ops: list[tuple[str, bytes]] = []
    names = [f"bench-{t:05d}" for t in range(topics)]
    for name in names:
        assignment = {p: tuple(((p + k) % BROKERS) + 1 for k in range(3)) for p in range(partitions_per_topic)}
        ops.append((schema.topic_config_path(name), schema.TopicConfigRecord({"min.insync.replicas": "2"}).encode()))
        ops.append((schema.topic_path(name), schema.TopicAssignment(assignment).encode()))
        ops.append((schema.partitions_path(name), b""))
        for p, replicas in assignment.items():
            isr = replicas[:2] if p % 13 == 0 else replicas
            leader = -1 if p % 97 == 0 else replicas[0]
            state = schema.PartitionStateRecord(leader=leader, leader_epoch=1, isr=isr, controller_epoch=1)
            ops.append((schema.partition_path(name, p), b""))
            ops.append((schema.partition_state_path(name, p), state.encode()))
    for start in range(0, len(ops), TRANSACTION_OPS):
        tx = kazoo.transaction()
        for path, data in ops[start:start + TRANSACTION_OPS]:
            tx.create(path, data)
        results = tx.commit()
        failed = [r for r in results if isinstance(r, Exception)]
        assert not failed, f"setup transaction failed: {failed[0]!r}"
    return names


def floor_seconds(connect: ZkEndpoint, names: list[str], partitions_per_topic: int) -> float:
    started = time.perf_counter()
    bulk.children_many(connect, [schema.TOPICS, schema.BROKER_IDS, schema.DELETE_TOPICS])
    bulk.get_many(connect, [schema.topic_path(n) for n in names] + [schema.topic_config_path(n) for n in names])
    states = bulk.get_many(connect, [schema.partition_state_path(n, p) for n in names for p in range(partitions_per_topic)])
    seconds = time.perf_counter() - started
    assert all(s is not None for s in states)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--partitions-per-topic", type=int, default=1_000)
    parser.add_argument("--keep", action="store_true", help="leave the state directory (for a look at the files)")
    args = parser.parse_args()
    topics = max(1, args.partitions // args.partitions_per_topic)
    partitions = topics * args.partitions_per_topic
    state_dir = Path(tempfile.mkdtemp(prefix="replog-bench-export-"))
    cluster = LocalCluster(state_dir / "cluster", ClusterSpec(controllers=0, brokers=BROKERS, gateways=1))
    cluster.up()
    try:
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        try:
            started = time.perf_counter()
            names = write_topology(zk, topics, args.partitions_per_topic)
            print(f"wrote {partitions} partitions in {len(names)} topics in {time.perf_counter() - started:.1f} s",
                  file=sys.stderr)
        finally:
            zk.stop()
        floor = floor_seconds(cluster.zookeeper_endpoint, names, args.partitions_per_topic)
        out = state_dir / "export"
        replog = Path(sys.executable).parent / "replog"
        started = time.perf_counter()
        result = subprocess.run(
            [str(replog), "--gateway", cluster.gateway_address, "--output", "json",
             "export", "--format", "parquet", "--out", str(out)],
            capture_output=True, text=True, timeout=300,
            env=cluster.client_env(),  # this cluster's certificate, not .state's from an earlier make up
        )
        seconds = time.perf_counter() - started
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return 1
        manifest = json.loads(result.stdout)
        assert manifest["tables"]["partitions"]["rows"] == partitions, manifest
        import pyarrow.parquet as pq

        table = pq.read_table(out / "partitions.parquet", columns=["unavailable"])
        assert table.num_rows == partitions
        print(json.dumps({
            "seconds": round(seconds, 3),
            "partitions": partitions,
            "topics": len(names),
            "floor_seconds": round(floor, 3),
            "floor": "bulk read (batched MultiReads) of the same znodes (children, assignments, configs, states)",
            "cli_reported_seconds": manifest["seconds"],
            "goal_seconds": GOAL_SECONDS,
            "within_goal": seconds < GOAL_SECONDS,
        }))
        return 0
    finally:
        cluster.down()
        if not args.keep:
            import shutil

            shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
