"""kill -9 of brokers while their log cleaners rewrite segments: nothing acknowledged is lost and the
replicas agree on the latest value of every key. The writes are recorded as a history, which the
compaction-aware checker judges against a consumer's read and against every replica's own files.

The cleaners are throttled so that each rewrite takes seconds: a broker killed then leaves a
`.cleaned` file (a rewrite not decided yet) in the replica's directory, which recovery discards. The
test kills until it has seen that at least twice. (The instants between the rename to `.swap` and
the end of the swap are too short to hit by chance: test_compaction_power_loss.py holds a broker
there with the power-loss filesystem and kills it, and the unit tests crash the swap at each of its
renames, tests/unit/broker/log/test_cleaner.py.)
"""

from __future__ import annotations

import random

import pytest

from replog.client import Producer
from replog.devcluster import ClusterSpec
from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    broker_name,
    start_cluster,
    wait_for,
    wait_for_leader,
    zk_session,
)
from tests.fault.compaction_helpers import acknowledged, leftovers, send_keyed, settle_and_judge
from tests.fault.history.compacted import KeyedSends
from tests.fault.history.history import History
from tests.integration.controller_helpers import create_topic
from tests.integration.test_compaction import FILLER_KEY

pytestmark = pytest.mark.fault

TOPIC = "kill-compacted"
SEGMENT_BYTES = 16384
KEYS = 300
KILLS_MAX = 12
INTERRUPTED_WANTED = 2
DEADLINE_S = 120
DELETE_RETENTION_MS = 86_400_000  # no tombstone expires during the test


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker") if cluster.is_running(p.name)]


def write(sends: KeyedSends, final: dict, rng: random.Random, count: int) -> None:
    """`count` keyed writes (10% tombstones), acks=all; each counts once it is acknowledged."""
    acknowledged(send_keyed(sends, rng, count, keys=KEYS, pad_bytes=200), final)


def test_brokers_killed_while_cleaning_recover_and_agree_on_every_key(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=6000, extra_args={
        "broker": ["--log-cleaner-backoff-ms", "100", "--log-cleaner-io-max-bytes-per-second", "150000",
                   "--replica-lag-time-max-ms", "3000"]}))
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1, 2, 3)}, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                                 "segment.bytes": str(SEGMENT_BYTES), "min.insync.replicas": "2",
                                                 "delete.retention.ms": str(DELETE_RETENTION_MS)})
        wait_for_leader(cluster, zk, TOPIC, 1, 30)
    rng = random.Random(61)
    final: dict[bytes, bytes | None] = {}
    history = History()
    interrupted = []
    # one idempotent producer throughout: its latest batch (the filler, last) is in the active segment
    with Producer(bootstrap(cluster), acks=-1, linger_ms=5, request_timeout_ms=5000) as producer:
        sends = KeyedSends(history, producer, TOPIC)
        for kill in range(KILLS_MAX):
            write(sends, final, rng, 3000)
            victim = 1 + kill % 3
            if kill % 2 == 0:  # a rewrite is under way once a .cleaned file shows; else kill whenever
                wait_for(lambda: leftovers(cluster, victim, TOPIC) or None, DEADLINE_S,
                         f"broker {victim} to be rewriting a segment")
            cluster.kill(broker_name(victim))
            found = leftovers(cluster, victim, TOPIC)
            if found:
                interrupted.append((victim, found))
            cluster.start(broker_name(victim))
            cluster.wait_healthy([broker_name(victim)], 60)
            if len(interrupted) >= INTERRUPTED_WANTED and kill >= 3:
                break
        assert len(interrupted) >= INTERRUPTED_WANTED, interrupted
        # the last writes roll into cleanable segments behind a filler; then every replica converges
        for _ in range(2 * SEGMENT_BYTES // 1000):
            sends.send(FILLER_KEY, pad_bytes=1000)
        producer.flush()
        sends.close()
    live = {k: v for k, v in final.items() if v is not None}
    read = settle_and_judge(cluster, bootstrap(cluster), history, TOPIC, final,
                            delete_retention_ms=DELETE_RETENTION_MS, deadline_s=DEADLINE_S,
                            history_file=cluster.log_dir / "history.jsonl")
    seen_values = {record.key: record.value for record in read}
    seen_values.pop(FILLER_KEY, None)
    assert {k: v for k, v in seen_values.items() if v is not None} == live
