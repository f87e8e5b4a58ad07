"""Power loss in the middle of a cleaner's rewrite: brokers whose log directories live on the power-loss
filesystem (tests/fault/powerloss/) lose every write they had not synced while a compacted topic in the
durable mode (flush.messages=1) is being cleaned. Nothing acknowledged is lost, recovery leaves no
cleaner file behind, and the replicas agree on the latest value of every key. The writes are recorded as a
history, which the compaction-aware checker judges against a consumer's read and every replica's own files."""

from __future__ import annotations

import random

import pytest

from replog.client import Producer
from replog.devcluster import ClusterSpec
from tests.fault.compaction_helpers import leftovers, settle_and_judge
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


def test_power_loss_mid_rewrite_loses_nothing_acknowledged(cluster_factory, tmp_path, monkeypatch):
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
            pending = []
            for _ in range(6000):
                key = b"key-%03d" % rng.randrange(KEYS)
                pending.append((key, *sends.send(key, tombstone=rng.random() < 0.1, pad_bytes=150)))
            for key, value, handle in pending:
                handle.result(90)
                final[key] = value
            # the power goes while broker 1's cleaner is writing a rewrite
            wait_for(lambda: leftovers(cluster, 1, TOPIC) or None, DEADLINE_S, "broker 1 to be rewriting a segment")
            lose_power(cluster, disks, EVERY_BROKER)
            for _ in range(2 * SEGMENT_BYTES // 1000):
                sends.send(FILLER_KEY, pad_bytes=1000)
            producer.flush()
            sends.close()
        settle_and_judge(cluster, bootstrap, history, TOPIC, final, delete_retention_ms=DELETE_RETENTION_MS,
                         deadline_s=DEADLINE_S, history_file=tmp_path / "history.jsonl")
