"""Client failover benchmark: kill -9 a leader while the producer as shipped writes, and measure
the longest time one partition took no acknowledged write.

    .venv/bin/python bench/client_failover.py

Starts a local cluster (ZooKeeper, one controller, three brokers, ZooKeeper session timeout
`--session-timeout-ms`, 6 s by default), creates a topic of `--partitions` partitions (6) with
three replicas each and min.insync.replicas 2, their leaders rotating over the brokers, and
drives one Producer built with nothing but its bootstrap list (idempotent, acks=all and every
other default as shipped): a load thread hands it one record per partition every
1 / `--rate-per-partition` s. After `--warm-up-s` it kill -9s broker 1, the leader of every
third partition, and keeps the load on for `--after-s` more seconds. It never calls `flush()`
while it measures (that would hide a partition that stopped sending); it closes the producer
only once the measurement is taken.

Reported (the last line of standard output, one JSON object):
- longest_gap_s: over every partition, the longest time between two acknowledgements of it
  (callbacks of the records' futures), from its last one before the kill to the end of the
  load; a partition acknowledged nothing more counts until the end of the load;
- gap_s_by_partition, moved_partitions (those broker 1 led);
- kill_to_new_leaders_s: from the kill until ZooKeeper names a live leader for every moved
  partition (polled every 50 ms): how long the cluster took, against which the client's
  longest gap is to be read;
- sent, acknowledged_at_end, pending_at_end (records sent and not yet acknowledged as the load
  stops), errors (futures that failed), and the settings.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.client import Producer  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

TOPIC = "client-failover-bench"
KILLED = 1  # broker 1 leads partitions 0, 3, ... (rotating assignment)


class Load:
    """Sends one record per partition per tick on a thread; keeps every acknowledgement's time by partition."""

    def __init__(self, producer: Producer, partitions: int, rate_per_partition: float) -> None:
        self.producer = producer
        self.partitions = partitions
        self.interval_s = 1 / rate_per_partition
        self.acks: list[list[float]] = [[] for _ in range(partitions)]
        self.errors: list[str] = []
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)

    def start(self) -> "Load":
        self._thread.start()
        return self

    def _run(self) -> None:
        next_s = time.monotonic()
        while not self._stop.is_set():
            for p in range(self.partitions):
                future = self.producer.send(TOPIC, b"x" * 100, partition=p)
                future.add_done_callback(lambda f, p=p: self._done(p, f))
                self.sent += 1
            next_s += self.interval_s
            self._stop.wait(max(0.0, next_s - time.monotonic()))

    def _done(self, partition: int, future) -> None:
        at = time.monotonic()
        with self._lock:
            if future.exception() is not None:
                self.errors.append(str(future.exception()))
            else:
                self.acks[partition].append(at)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def acknowledged(self) -> int:
        with self._lock:
            return sum(len(times) for times in self.acks)

    def longest_gap_s(self, partition: int, start_s: float, end_s: float) -> float:
        """Longest time without an acknowledgement of `partition`, from its last one at or before
        `start_s` to `end_s` (open at the end: a partition that went quiet counts until `end_s`)."""
        with self._lock:
            times = sorted(self.acks[partition])
        before = [t for t in times if t <= start_s]
        marks = ([before[-1]] if before else [start_s]) + [t for t in times if start_s < t <= end_s] + [end_s]
        return max(b - a for a, b in zip(marks, marks[1:]))


def wait_new_leaders(cluster, partitions: list[int], timeout_s: float) -> float:
    """Seconds until ZooKeeper names a live leader (not the killed broker) for every one of `partitions`."""
    started = time.monotonic()
    harness.wait_until(lambda: all(s is not None and s.leader >= 0 and s.leader != KILLED for i, s in enumerate(
        harness.read_states(cluster.zookeeper_endpoint, TOPIC, max(partitions) + 1)) if i in partitions),
        timeout_s, "new leaders for the killed broker's partitions", interval_s=0.05)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--rate-per-partition", type=float, default=100.0, help="records per second per partition")
    parser.add_argument("--warm-up-s", type=float, default=5.0)
    parser.add_argument("--after-s", type=float, default=30.0, help="seconds of load after the kill")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's state directory for inspection")
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=0, zookeeper_session_timeout_ms=args.session_timeout_ms)
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        harness.note(f"state in {cluster.state_dir}")
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        harness.create_topic(zk, TOPIC, harness.rotating_assignment(args.partitions, [1, 2, 3], 3),
                             {"min.insync.replicas": "2"})
        zk.stop()
        harness.wait_for_full_isrs(cluster.zookeeper_endpoint, {TOPIC: args.partitions}, 3, 60, "full ISRs")
        states = harness.read_states(cluster.zookeeper_endpoint, TOPIC, args.partitions)
        moved = [p for p, s in enumerate(states) if s.leader == KILLED]
        producer = Producer([p.address for p in cluster.of_role("broker")])
        load = Load(producer, args.partitions, args.rate_per_partition).start()
        harness.wait_until(lambda: all(load.acks[p] for p in range(args.partitions)), 60,
                           "an acknowledgement from every partition")
        time.sleep(args.warm_up_s)  # the load runs steadily for the warm-up's length before the kill
        harness.note(f"killing broker {KILLED}, leader of partitions {moved}")
        killed_at = time.monotonic()
        cluster.signal(f"broker-{KILLED}", signal.SIGKILL)
        new_leaders_s = wait_new_leaders(cluster, moved, 60)
        time.sleep(max(0.0, killed_at + args.after_s - time.monotonic()))  # the load's run after the kill
        load.stop()
        ended_at = time.monotonic()
        acknowledged = load.acknowledged()
        gaps = {p: load.longest_gap_s(p, killed_at, ended_at) for p in range(args.partitions)}
        try:
            producer.close(timeout_s=60)
        except TimeoutError as exc:
            harness.note(f"close: {exc}")
        result = {
            "longest_gap_s": round(max(gaps.values()), 3),
            "gap_s_by_partition": {str(p): round(g, 3) for p, g in gaps.items()},
            "moved_partitions": moved,
            "kill_to_new_leaders_s": round(new_leaders_s, 3),
            "sent": load.sent,
            "acknowledged_at_end": acknowledged,
            "pending_at_end": load.sent - acknowledged - len(load.errors),
            "errors": len(load.errors),
            "first_error": load.errors[0] if load.errors else None,
            "session_timeout_ms": args.session_timeout_ms,
            "partitions": args.partitions,
            "rate_per_partition": args.rate_per_partition,
            "after_s": args.after_s,
        }
    harness.emit(result)


if __name__ == "__main__":
    main()
