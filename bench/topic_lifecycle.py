"""Topic lifecycle benchmark: create a topic of many partitions, wait until every broker
hosts its logs, delete it, and time both.

    .venv/bin/python bench/topic_lifecycle.py --partitions 10000

Starts its own local cluster (ZooKeeper, one controller, three brokers, one
gateway). Reported:
- create_s: from writing the topic's assignment (as the gateway does) until
  every broker's data directory holds the log directory of each replica
  assigned to it;
- delete_s: from marking the topic under /admin/delete_topics until its
  znodes are gone and no broker holds any directory of it (set-aside ones
  included);
- floor_fs_create_s / floor_fs_remove_s: the same number of replica
  directories, each with an empty segment and index file, created and then
  removed by this process on the same disk, one after another: the filesystem
  work alone (the brokers do theirs three at a time, on two cores).

The last line of standard output is one JSON object. No goal is set for these;
they show what a topic of this size costs the cluster.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.common.zk import schema  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

TOPIC = "lifecycle-bench"
BROKERS = (1, 2, 3)


def replica_directories(cluster, broker_id: int) -> list[str]:
    """The topic's directories in a broker's data directory (set-aside ones included)."""
    data = cluster.data_dir(f"broker-{broker_id}")
    if not data.exists():
        return []
    return [entry.name for entry in os.scandir(data) if entry.is_dir() and entry.name.startswith(f"{TOPIC}-")]


def filesystem_floor_s(root: Path, directories: int) -> tuple[float, float]:
    """Seconds to create `directories` directories with two empty files each, then to remove them."""
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for i in range(directories):
        directory = root / f"floor-{i}"
        directory.mkdir()
        for name in ("00000000000000000000.log", "00000000000000000000.index"):
            os.close(os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644))
    created = time.monotonic()
    shutil.rmtree(root)
    return created - started, time.monotonic() - created


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--timeout-s", type=float, default=600)
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=len(BROKERS), gateways=1)
    with harness.local_cluster(spec) as cluster:
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        assignment = harness.rotating_assignment(args.partitions, list(BROKERS), 3)
        expected = {b: sum(1 for replicas in assignment.values() if b in replicas) for b in BROKERS}

        harness.note(f"creating {args.partitions} partitions")
        started = time.monotonic()
        harness.create_topic(zk, TOPIC, assignment)
        harness.wait_until(lambda: all(len(replica_directories(cluster, b)) == expected[b] for b in BROKERS),
                           args.timeout_s, "every broker to host its replicas' logs")
        create_s = time.monotonic() - started

        harness.note("deleting the topic")
        started = time.monotonic()
        zk.kazoo.create(schema.delete_topic_path(TOPIC), b"", makepath=True)
        harness.wait_until(lambda: zk.kazoo.exists(schema.topic_path(TOPIC)) is None
                           and not any(replica_directories(cluster, b) for b in BROKERS),
                           args.timeout_s, "the topic's znodes and directories to go")
        delete_s = time.monotonic() - started
        zk.stop()

        harness.note("measuring the filesystem floor")
        floor_create_s, floor_remove_s = filesystem_floor_s(cluster.state_dir / "fs-floor", 3 * args.partitions)
    harness.emit({
        "partitions": args.partitions,
        "replicas": 3 * args.partitions,
        "create_s": round(create_s, 3),
        "delete_s": round(delete_s, 3),
        "floor_fs_create_s": round(floor_create_s, 3),
        "floor_fs_remove_s": round(floor_remove_s, 3),
    })


if __name__ == "__main__":
    main()
