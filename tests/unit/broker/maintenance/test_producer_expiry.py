"""The producer-expiry chore over real partition logs: a full table forgets its idle producers as soon as
it refused a new one, the state survives a rebuild from the log as it was, and refusals are logged."""

from __future__ import annotations

import logging
from pathlib import Path

from prometheus_client import CollectorRegistry

from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.core.produce.producer_state import ProducerStateLimits
from replog.broker.log import LogConfig, PartitionLog
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import append_produced
from replog.broker.maintenance.producer_expiry import ProducerExpiry
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import encode_batch, validate_batch

TP = TopicPartition("orders", 0)
LIMITS = ProducerStateLimits(producer_ids_max=2, producer_id_expiration_ms=60_000)
CHECK_INTERVAL_MS = 600_000  # never due here: only a refusal makes the chore look


def leader(tmp_path: Path, clock: ManualClock) -> HostedPartition:
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig(), clock)
    hosted = HostedPartition(TP, 1, log, high_watermark=0, producer_state=rebuild_from_log(log, LIMITS))
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(TP, 1, 0, (1,), 0, (1,)), now_ms=0)
    return hosted


def first_batch(hosted: HostedPartition, producer_id: int, clock: ManualClock):
    batch = encode_batch([(None, b"v", clock.now_ms())], producer_id=producer_id, producer_epoch=0, base_sequence=0)
    return append_produced(hosted, acks=1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                           fsync=False, now_ms=0)


def sample(metrics_registry: CollectorRegistry) -> float:
    return metrics_registry.get_sample_value("replog_broker_producer_ids_expired_total") or 0.0


def test_a_full_table_forgets_its_idle_producers_when_it_refused_a_new_one(tmp_path, caplog):
    clock = ManualClock()
    hosted = leader(tmp_path, clock)
    registry = CollectorRegistry()
    chore = ProducerExpiry(lambda: [hosted], clock, BrokerMetrics(registry), check_interval_ms=CHECK_INTERVAL_MS)
    assert first_batch(hosted, 1, clock).error_code is ErrorCode.NONE
    clock.advance(30_000)
    assert first_batch(hosted, 2, clock).error_code is ErrorCode.NONE
    with caplog.at_level(logging.WARNING, logger="replog.broker.maintenance.producer_expiry"):
        assert first_batch(hosted, 3, clock).error_code is ErrorCode.PRODUCER_STATE_FULL
        chore()
    assert [r.getMessage() for r in caplog.records if "PRODUCER_STATE_FULL" in r.getMessage()] == [
        f"{TP}: refused the first batch of 1 new idempotent producer(s): the partition already tracks "
        "producer_ids_max=2 producers, none idle for 60000 ms (PRODUCER_STATE_FULL)"]

    clock.advance(30_000)  # producer 1 idle for 60 s
    assert first_batch(hosted, 3, clock).error_code is ErrorCode.PRODUCER_STATE_FULL
    chore()  # the refusal has the table forget producer 1 at once
    assert sample(registry) == 1 and hosted.producer_state.producer_epoch(1) is None
    assert hosted.producer_state.producer_epoch(2) == 0
    # Restarted from the log, the table knows both again, with their batches' times: the chore forgets
    # producer 1 again and keeps producer 2, as if there had been no restart.
    rebuilt = rebuild_from_log(hosted.log, LIMITS)
    assert rebuilt.producer_epoch(1) == 0
    assert rebuilt.expire(clock.now_ms()) == [1]
    assert first_batch(hosted, 3, clock).error_code is ErrorCode.NONE, "room again for a new producer"
