"""Forgetting idle producers where room is needed, and reporting the new producers a full table refused.

Theory of operation (core/produce/producer_state.py; Kafka's `producer.id.expiration.ms` and its
periodic `removeExpiredProducers`):

A checkpointer chore. Every `producer_id_expiration_check_interval_ms`, and at the first tick
after a partition refused a new producer (PRODUCER_STATE_FULL), it asks the partition's
producer table, under the partition's lock, to forget the producers idle for
`producer_id_expiration_ms` (wall clock, the batches' timestamps' clock); the table does so
only when it is full. It counts them in `replog_broker_producer_ids_expired_total` and logs one line
per round that forgot any. The refusals are reported once per tick: one warning line per
partition, so an operator sees which partition hit `producer_ids_max`; the answers themselves
are counted by `replog_broker_produce_partition_errors_total{error="PRODUCER_STATE_FULL"}`.
"""

from __future__ import annotations

import logging
from typing import Callable

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common.clock import Clock

log = logging.getLogger(__name__)


class ProducerExpiry:
    def __init__(self, hosted: Callable[[], list[HostedPartition]], clock: Clock, metrics: BrokerMetrics, *,
                 check_interval_ms: int) -> None:
        self._hosted = hosted
        self._clock = clock
        self._metrics = metrics
        self._check_interval_ms = check_interval_ms
        self._next_check_ms = clock.monotonic_ms() + check_interval_ms

    def __call__(self) -> None:
        """One checkpointer tick."""
        expire = self._clock.monotonic_ms() >= self._next_check_ms
        if expire:
            self._next_check_ms = self._clock.monotonic_ms() + self._check_interval_ms
        now_ms = self._clock.now_ms()
        expired = 0
        for hosted in self._hosted():
            refused = 0
            if hosted.producer_state.full_refusals:
                refused, limits = hosted.run(_take_full_refusals)
                log.warning("%s: refused the first batch of %d new idempotent producer(s): the partition already "
                            "tracks producer_ids_max=%d producers, none idle for %d ms (PRODUCER_STATE_FULL)",
                            hosted.topic_partition, refused, limits.producer_ids_max, limits.producer_id_expiration_ms)
            if expire or refused:
                expired += hosted.run(_expire, now_ms)
        if expired:
            self._metrics.producer_ids_expired.inc(expired)
            log.info("forgot %d idempotent producer(s) idle for producer_id_expiration_ms", expired)


def _take_full_refusals(hosted: HostedPartition):
    table = hosted.producer_state
    refused, table.full_refusals = table.full_refusals, 0
    return (refused, table.limits), NO_EFFECTS


def _expire(hosted: HostedPartition, now_ms: int):
    return len(hosted.producer_state.expire(now_ms)), NO_EFFECTS
