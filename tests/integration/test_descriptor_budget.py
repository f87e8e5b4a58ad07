"""A broker hosting more busy replicas than it may open files (docs/perf/segment-descriptors.md).

Each broker starts with RLIMIT_NOFILE 512 (soft and hard, which it cannot raise), and hosts 400
replicas, every one of them written to with acks=all. Before the descriptor budget each busy replica
kept its segment open, so such a broker ran out of descriptors, and an EMFILE took its log directory
offline and halted it. Now the least recently used logs give their descriptors back: both brokers keep
running, every record is acknowledged and read back, the brokers' descriptor counts stay below the
limit throughout, and no operation failed for want of a descriptor.
"""

from __future__ import annotations

import os
import threading

import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec

from .broker_helpers import wait_for, wait_for_isr, zk_session
from .controller_helpers import create_topic

pytestmark = pytest.mark.integration

OPEN_FILES_MAX = 512
PARTITIONS = 700  # replicas on each of the 2 brokers, more than the 512 descriptors it may open
ROUNDS = 3
DEADLINE_S = 180.0


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class DescriptorWatch:
    """Samples the brokers' open descriptors until stopped; keeps the largest count seen per broker."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.largest = {name: 0 for name in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DescriptorWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for name, pid in self.pids.items():
                try:
                    self.largest[name] = max(self.largest[name], open_descriptors(pid))
                except OSError:  # the process is gone: the test's liveness check says so
                    pass


def test_a_broker_with_more_busy_replicas_than_descriptors_keeps_serving(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=2, gateways=0,
                                          open_files_max={"broker": OPEN_FILES_MAX}))
    try:
        brokers = {p.name: p.pid for p in cluster.of_role("broker")}
        for pid in brokers.values():
            with open(f"/proc/{pid}/limits") as limits:
                assert any(line.startswith("Max open files") and f" {OPEN_FILES_MAX} " in line for line in limits)
        with zk_session(cluster) as zk:
            create_topic(zk, "busy", {p: (p % 2 + 1, (p + 1) % 2 + 1) for p in range(PARTITIONS)},
                         {"min.insync.replicas": "2"})
            for p in range(PARTITIONS):
                wait_for_isr(cluster, zk, "busy", {1, 2}, DEADLINE_S, partition=p)

        bootstrap = [p.address for p in cluster.of_role("broker")]
        with DescriptorWatch(brokers) as watch:
            with Producer(bootstrap, acks="all") as producer:
                for round_ in range(ROUNDS):
                    handles = [producer.send("busy", b"%d-%d" % (p, round_), partition=p) for p in range(PARTITIONS)]
                    for handle in handles:
                        assert handle.result(timeout=DEADLINE_S).partition in range(PARTITIONS)
            with Consumer(bootstrap, "busy", iteration_timeout_ms=10_000) as consumer:
                read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
                wanted = PARTITIONS * ROUNDS
                count = 0
                for record in consumer:
                    read[record.partition].append(record.value)
                    count += 1
                    if count == wanted:
                        break
        assert read == {p: [b"%d-%d" % (p, r) for r in range(ROUNDS)] for p in range(PARTITIONS)}

        for name, pid in brokers.items():
            assert cluster.is_running(name) and cluster.processes[name].pid == pid, f"{name} stopped"
            assert watch.largest[name] < OPEN_FILES_MAX, (name, watch.largest[name])
            log_text = cluster.log_path(name).read_text(errors="replace")
            assert "Too many open files" not in log_text and "out of file descriptors" not in log_text, name
            assert "is offline" not in log_text, name
            wait_for(lambda: "logs may hold" in cluster.log_path(name).read_text(errors="replace"), 5,
                     f"{name} reports its descriptor budget")
    finally:
        cluster.discard()
