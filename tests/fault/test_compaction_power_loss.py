"""Power loss and kill -9 in the middle of a cleaner's work: brokers whose log directories live on the
power-loss filesystem (tests/fault/powerloss/) while a compacted topic in the durable mode
(flush.messages=1) is being cleaned. Three moments, one after the other on the same log:

- a broker killed inside a swap (its rename to `.swap` done, the segment not replaced yet): the
  filesystem holds that rename until the kill has landed, so the moment is hit every run;
- every broker losing power while one of them is held inside a swap the same way;
- every broker losing power while one of them writes a rewrite (a `.cleaned` file).

Nothing acknowledged is lost, recovery finishes the swaps and leaves no cleaner file behind, and the
replicas agree on the latest value of every key. The writes are recorded as a history, which the
compaction-aware checker judges against a consumer's read and every replica's own files."""

from __future__ import annotations

import random
import signal

import pytest

from replog.client import Producer
from replog.devcluster import ClusterSpec
from tests.fault.compaction_helpers import acknowledged, leftovers, send_keyed, settle_and_judge
from tests.fault.history.compacted import KeyedSends
from tests.fault.history.history import History
from tests.fault.test_power_loss import EVERY_BROKER, lose_power, on_powerloss_disks
from tests.integration.broker_helpers import create_topic, wait_for, wait_for_leader, zk_session
from tests.integration.test_compaction import FILLER_KEY

pytestmark = pytest.mark.fault

TOPIC = "powerloss-compacted"
SEGMENT_BYTES = 16384
KEYS = 200
DEADLINE_S = 120
DELETE_RETENTION_MS = 86_400_000  # no tombstone expires during the test
SPEC = ClusterSpec(
    controllers=1, gateways=0, zookeeper_session_timeout_ms=4000, zookeeper_force_sync=True,
    extra_args={"broker": ["--replica-high-watermark-checkpoint-interval-ms", "200", "--log-cleaner-backoff-ms",
                           "100", "--log-cleaner-io-max-bytes-per-second", "150000"]},
)


def send(sends: KeyedSends, rng: random.Random, count: int) -> list:
    return send_keyed(sends, rng, count, keys=KEYS, pad_bytes=150)


def hold_inside_a_swap(disk, broker_id: int) -> str:
    """Wait until the broker's cleaner has renamed a rewrite of TOPIC to `.swap` and is held there (the
    filesystem holds that rename until its faults are lifted); the held path."""
    held = wait_for(lambda: [p for p in disk.stats()["renames_held"] if f"/{TOPIC}-0/" in p] or None, DEADLINE_S,
                    f"broker {broker_id}'s cleaner to swap in a segment")
    return held[0]


def finished_swaps(cluster, broker_id: int) -> int:
    return cluster.log_path(f"broker-{broker_id}").read_text().count("finishing the interrupted swap")


def test_kill_and_power_loss_mid_swap_and_mid_rewrite_lose_nothing_acknowledged(cluster_factory, tmp_path,
                                                                                  monkeypatch):
    with on_powerloss_disks(cluster_factory(SPEC, start=False), tmp_path / "backing") as (cluster, disks):
        for name, value in cluster.client_env().items():  # the producer calls this cluster with its own TLS files
            monkeypatch.setenv(name, value)
        with zk_session(cluster) as zk:
            create_topic(zk, TOPIC, {0: (1, 2, 3)}, {
                "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "flush.messages": "1",
                "segment.bytes": str(SEGMENT_BYTES), "min.insync.replicas": "2",
                "delete.retention.ms": str(DELETE_RETENTION_MS)})
            wait_for_leader(cluster, zk, TOPIC, 1, 30, followers=(2, 3))
        rng = random.Random(62)
        final: dict[bytes, bytes | None] = {}
        history = History()
        bootstrap = [p.address for p in cluster.of_role("broker")]
        with Producer(bootstrap, acks=-1, linger_ms=5) as producer:
            sends = KeyedSends(history, producer, TOPIC)

            # kill -9 of the leader inside a swap, with writes in flight: the kill lands before the
            # held rename returns
            disks["broker-1"].faults(rename_stall_suffix=".swap", rename_stall_s=DEADLINE_S)
            pending = send(sends, rng, 6000)
            swap = hold_inside_a_swap(disks["broker-1"], 1)
            cluster.signal("broker-1", signal.SIGKILL)
            disks["broker-1"].faults()
            cluster.kill("broker-1")
            assert swap.rsplit("/", 1)[1] in leftovers(cluster, 1, TOPIC), "the kill did not land inside the swap"
            cluster.start("broker-1")
            cluster.wait_healthy(["broker-1"], 60)
            assert finished_swaps(cluster, 1) == 1
            acknowledged(pending, final)

            # every broker loses power while a follower is inside a swap, writes in flight
            with zk_session(cluster) as zk:
                leader = wait_for_leader(cluster, zk, TOPIC, None, 60).leader
            follower = min(b for b in (1, 2, 3) if b != leader)
            swaps_before = finished_swaps(cluster, follower)
            disks[f"broker-{follower}"].faults(rename_stall_suffix=".swap", rename_stall_s=DEADLINE_S)
            pending = send(sends, rng, 2000)
            hold_inside_a_swap(disks[f"broker-{follower}"], follower)
            for name in EVERY_BROKER:
                cluster.signal(name, signal.SIGKILL)
            disks[f"broker-{follower}"].faults()
            lose_power(cluster, disks, EVERY_BROKER)
            assert finished_swaps(cluster, follower) == swaps_before + 1
            acknowledged(pending, final)

            # every broker loses power while broker 1's cleaner is writing a rewrite
            wait_for(lambda: [n for n in leftovers(cluster, 1, TOPIC) if n.endswith(".cleaned")] or None,
                     DEADLINE_S, "broker 1 to be rewriting a segment")
            lose_power(cluster, disks, EVERY_BROKER)
            for _ in range(2 * SEGMENT_BYTES // 1000):
                sends.send(FILLER_KEY, pad_bytes=1000)
            producer.flush()
            sends.close()
        settle_and_judge(cluster, bootstrap, history, TOPIC, final, delete_retention_ms=DELETE_RETENTION_MS,
                         deadline_s=DEADLINE_S, history_file=tmp_path / "history.jsonl")
