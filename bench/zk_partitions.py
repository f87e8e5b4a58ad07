"""ZooKeeper alone holding the partition znodes of a large cluster: whether its sessions survive, and
the floors of the controller's writes and full load at that size.

    .venv/bin/python bench/zk_partitions.py --partitions 1000000 --zookeeper-heap-mb 3584
    .venv/bin/python bench/zk_partitions.py --partitions 1000000 --zookeeper-heap-mb 512

Starts one plaintext standalone ZooKeeper server (the devcluster's command line and config) and
writes, as the gateway and controller do, `--partitions` partitions in topics of `--per-topic`:
each topic's assignment znode (RF 3), then for each partition its znode and its state znode, in
pipelined `multi`s of 1,000 operations on one session, at most `--window` in flight (the controller's
writer keeps 8). Meanwhile a kazoo session with a 10 s timeout (the services' kind of session)
counts how often it was suspended (a heartbeat went unanswered) and lost (its session expired), and
times an `exists` every 0.25 s on another thread: a read waits in the server's one request pipeline
behind the writes queued before it, as a heartbeat does (`probe_ms`: p50, p99 and the longest).

Reported: write_s; full_read_s (every state read back in MultiReads, the floor of a new controller's
full load); the server's heap live after a full collection (`jcmd GC.heap_info` after
`GC.run`) and its collections (jstat: young and full counts and seconds); suspended / lost counts;
`failed`, the first error when the server could not take the writes. The last line of standard
output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient, KazooState

from replog.common.zk import bulk, schema
from replog.common.zk import multi_writer as mw
from replog.devcluster import zookeeper
from replog.devcluster.ports import free_port

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402


def start_server(directory: Path, heap_mb: int) -> tuple[subprocess.Popen, int]:
    port = free_port()
    config = zookeeper.write_config(directory, port)
    log = open(directory / "zookeeper.log", "wb")
    process = subprocess.Popen(zookeeper.zookeeper_command(config, heap_mb=heap_mb), stdout=log,
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while zookeeper.mode("127.0.0.1", port) is None:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"ZooKeeper did not start; see {directory / 'zookeeper.log'}")
        time.sleep(0.1)
    return process, port


def live_heap_mb(pid: int) -> float:
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=300, check=False)
    text = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60).stdout
    used = re.search(r"used (\d+)K", text)
    return round(int(used.group(1)) / 1024, 1) if used else -1.0


def collections(pid: int) -> dict:
    """jstat's young and full collection counts and seconds so far."""
    lines = subprocess.run(["jstat", "-gcutil", str(pid)], capture_output=True, text=True, timeout=60).stdout.split("\n")
    if len(lines) < 2 or not lines[1].strip():
        return {}
    row = dict(zip(lines[0].split(), lines[1].split()))
    return {"young": int(row["YGC"]), "young_s": float(row["YGCT"]), "full": int(row["FGC"]),
            "full_s": float(row["FGCT"]), "concurrent": int(row["CGC"]), "total_s": float(row["GCT"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1000000)
    parser.add_argument("--per-topic", type=int, default=100000)
    parser.add_argument("--zookeeper-heap-mb", type=int, default=3584)
    parser.add_argument("--window", type=int, default=mw.WINDOW, help="multis in flight at most")
    args = parser.parse_args()
    mw.WINDOW = args.window
    directory = Path(tempfile.mkdtemp(prefix="replog-zk-partitions-"))
    process, port = start_server(directory, args.zookeeper_heap_mb)
    connect = f"127.0.0.1:{port}"
    events = {"suspended": 0, "lost": 0}
    watcher = KazooClient(hosts=connect, timeout=10.0)

    def on_state(state) -> None:
        if state == KazooState.SUSPENDED:
            events["suspended"] += 1
        elif state == KazooState.LOST:
            events["lost"] += 1

    watcher.add_listener(on_state)
    result: dict = {"partitions": args.partitions, "zookeeper_heap_mb": args.zookeeper_heap_mb,
                    "window": args.window}
    probes: list[float] = []
    probing = threading.Event()

    def probe() -> None:
        while not probing.wait(0.25):
            started = time.monotonic()
            try:
                watcher.exists("/brokers")
            except Exception:  # noqa: BLE001 - a lost connection shows in the session counts
                continue
            probes.append(time.monotonic() - started)

    prober = threading.Thread(target=probe, name="probe", daemon=True)
    try:
        watcher.start(timeout=30)
        watcher.ensure_path("/brokers/topics")
        prober.start()
        topics = [(f"zk-bench-{i}", min(args.per_topic, args.partitions - start))
                  for i, start in enumerate(range(0, args.partitions, args.per_topic))]
        writer = mw.MultiWriter(connect, session_timeout_s=30)
        written = 0
        started = time.monotonic()
        try:
            for topic, count in topics:
                assignment = harness.rotating_assignment(count, [1, 2, 3], 3)
                ops: list[mw.Operation] = [mw.Create(schema.topic_path(topic),
                                                     schema.TopicAssignment(assignment).encode()),
                                           mw.Create(schema.partitions_path(topic))]
                for p in range(count):
                    replicas = assignment[p]
                    ops.append(mw.Create(schema.partition_path(topic, p)))
                    ops.append(mw.Create(schema.partition_state_path(topic, p),
                                         schema.PartitionStateRecord(replicas[0], 0, replicas, 1).encode()))
                outcomes = writer.commit([ops[:2]] + [ops[i:i + 1000] for i in range(2, len(ops), 1000)])
                failed = [o for o in outcomes if any(code != mw.OK for code in o)]
                if failed:
                    raise RuntimeError(f"{len(failed)} transactions failed in {topic}")
                written += count
                harness.note(f"{written} partitions written, {time.monotonic() - started:.1f} s; "
                             f"sessions suspended {events['suspended']}, lost {events['lost']}")
            result["write_s"] = round(time.monotonic() - started, 2)
        finally:
            writer.close()
            probing.set()
            prober.join(30)
        result["probe_ms"] = [round(harness.percentile(probes, q) * 1000, 1) for q in (0.5, 0.99, 1.0)]
        paths = [schema.partition_state_path(t, p) for t, count in topics for p in range(count)]
        started = time.monotonic()
        found = bulk.get_many(connect, paths)
        result["full_read_s"] = round(time.monotonic() - started, 2)
        assert all(found), "a state znode is missing"
    except Exception as error:  # noqa: BLE001 - the failure is the finding: reported, not raised
        result["failed"] = f"{type(error).__name__}: {error}"[:300]
        result["written_before_failure"] = written if "written" in locals() else 0
    finally:
        result["collections"] = collections(process.pid)
        result["live_heap_mb"] = live_heap_mb(process.pid) if process.poll() is None else -1.0
        result["sessions"] = dict(events)
        result["server_alive"] = process.poll() is None
        try:
            watcher.stop()
            watcher.close()
        finally:
            process.kill()
            process.wait(30)
            subprocess.run(["rm", "-rf", str(directory)], check=False)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
