"""The broker's Prometheus metrics: the `replog_broker_*` rows of replog.common.metrics.table,
which names them (docs/metrics.md).

Built by bootstrap (nothing at import time). Partition gauges are computed
when Prometheus scrapes, from a summary the replica manager supplies, so they
can never drift from the replicas themselves; so are the log directories' free
space and the groups' gauges. Counters and histograms are per request or per
ISR change, never per record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.registry import Collector

from replog.common.error_codes import ErrorCode
from replog.common.metrics import table as t

if TYPE_CHECKING:
    from replog.broker.log.descriptors import DescriptorBudget


@dataclass(frozen=True)
class PartitionSummary:
    partition_count: int = 0
    leader_count: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0
    offline_replicas: int = 0


_GAUGES = (
    (t.BROKER_REPLICAS, "partition_count"),
    (t.BROKER_LEADER_PARTITIONS, "leader_count"),
    (t.BROKER_UNDER_REPLICATED, "under_replicated"),
    (t.BROKER_UNDER_MIN_ISR, "under_min_isr"),
    (t.BROKER_AT_MIN_ISR, "at_min_isr"),
    (t.BROKER_OFFLINE_REPLICAS, "offline_replicas"),
)


class _PartitionGauges(Collector):
    def __init__(self, summary: Callable[[], PartitionSummary]) -> None:
        self._summary = summary

    def collect(self):
        summary = self._summary()
        for metric, field in _GAUGES:
            yield metric.family(getattr(summary, field))


@dataclass(frozen=True)
class FetchKindMetrics:
    """One fetch kind's series, bound once: `labels()` takes a lock and builds a key on every call,
    on the replication path (docs/perf/metrics-binding.md)."""

    kind: str
    requests: Counter
    bytes_out: Counter
    duration_s: Histogram
    partition_errors: Counter  # labelled (kind, error): bound per error only when one happens

    def count_errors(self, error_codes: Iterable[int]) -> None:
        """Count the partitions of one answer whose error code is not NONE (most answers have none)."""
        for code in error_codes:
            if code:
                self.partition_errors.labels(self.kind, ErrorCode(code).name).inc()


@dataclass(frozen=True)
class ProduceAcksMetrics:
    """The produce series of one acks value, bound once (as FetchKindMetrics)."""

    requests: Counter
    duration_s: Histogram


@dataclass(frozen=True)
class QuotaKindMetrics:
    """The client quota series of one kind (produce or fetch), bound once (as FetchKindMetrics)."""

    throttled: Counter
    refused: Counter
    throttle_seconds: Histogram


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self._registry = registry
        self.scrub_corrupt_segments = t.BROKER_SCRUB_CORRUPT_SEGMENTS.create(registry)
        self.isr_shrinks = t.BROKER_ISR_SHRINKS.create(registry)
        self.isr_expands = t.BROKER_ISR_EXPANDS.create(registry)
        self.failed_isr_updates = t.BROKER_FAILED_ISR_UPDATES.create(registry)
        self.produce_requests = t.BROKER_PRODUCE_REQUESTS.create(registry)
        self.produce_errors = t.BROKER_PRODUCE_PARTITION_ERRORS.create(registry)
        self.produce_duration_s = t.BROKER_PRODUCE_DURATION.create(registry)
        self.bytes_in = t.BROKER_PRODUCED_BYTES.create(registry)
        self.fetch_requests = t.BROKER_FETCH_REQUESTS.create(registry)
        self.fetch_duration_s = t.BROKER_FETCH_DURATION.create(registry)
        self.bytes_out = t.BROKER_FETCHED_BYTES.create(registry)
        self.fetch_errors = t.BROKER_FETCH_PARTITION_ERRORS.create(registry)
        self.replication_bytes_in = t.BROKER_REPLICATED_BYTES.create(registry)
        self.truncations = t.BROKER_FOLLOWER_TRUNCATIONS.create(registry)
        self.unclean_start = t.BROKER_UNCLEAN_START.create(registry)
        self.recovery_lost_records = t.BROKER_RECOVERY_LOST_RECORDS.create(registry)
        self.recovery_lost_partitions = t.BROKER_RECOVERY_LOST_PARTITIONS.create(registry)
        self.log_dir_online = t.BROKER_LOG_DIR_ONLINE.create(registry)
        self.producer_ids_expired = t.BROKER_PRODUCER_IDS_EXPIRED.create(registry)
        self.retention_segments_deleted = t.BROKER_RETENTION_SEGMENTS_DELETED.create(registry)
        self.retention_round_s = t.BROKER_RETENTION_ROUND.create(registry)
        self.cleaner_bytes = t.BROKER_CLEANER_BYTES_CLEANED.create(registry)
        self.cleaner_records_removed = t.BROKER_CLEANER_RECORDS_REMOVED.create(registry)
        self.cleaner_dirty_ratio = t.BROKER_CLEANER_DIRTY_RATIO.create(registry)
        self.cleaner_lag_s = t.BROKER_CLEANER_LAG.create(registry)
        self.group_rebalances = t.BROKER_GROUP_REBALANCES.create(registry)
        self.group_rebalance_s = t.BROKER_GROUP_REBALANCE.create(registry)
        self.group_offset_commits = t.BROKER_GROUP_OFFSET_COMMITS.create(registry)
        self.out_of_descriptors = t.BROKER_OUT_OF_DESCRIPTORS.create(registry)
        self.quota_throttled_requests = t.BROKER_QUOTA_THROTTLED_REQUESTS.create(registry)
        self.quota_refused_requests = t.BROKER_QUOTA_REFUSED_REQUESTS.create(registry)
        self.quota_throttle_seconds = t.BROKER_QUOTA_THROTTLE_TIME.create(registry)
        self.produce_quota = self._quota_kind("produce")
        self.fetch_quota = self._quota_kind("fetch")
        self.follower_fetch = self._fetch_kind("follower")
        self.consumer_fetch = self._fetch_kind("consumer")
        self._produce_by_acks = {acks: self._produce_acks(str(acks)) for acks in (0, 1, -1)}
        self._produce_invalid_acks = self._produce_acks("invalid")

    def produce_acks(self, acks: int) -> ProduceAcksMetrics:
        """The produce series of a request's acks value (any value but 0, 1 and -1 counts as "invalid")."""
        return self._produce_by_acks.get(acks, self._produce_invalid_acks)

    def _produce_acks(self, label: str) -> ProduceAcksMetrics:
        return ProduceAcksMetrics(self.produce_requests.labels(label), self.produce_duration_s.labels(label))

    def _quota_kind(self, kind: str) -> QuotaKindMetrics:
        return QuotaKindMetrics(self.quota_throttled_requests.labels(kind), self.quota_refused_requests.labels(kind),
                                self.quota_throttle_seconds.labels(kind))

    def _fetch_kind(self, kind: str) -> FetchKindMetrics:
        return FetchKindMetrics(kind, self.fetch_requests.labels(kind), self.bytes_out.labels(kind),
                                self.fetch_duration_s.labels(kind), self.fetch_errors)

    def watch_descriptors(self, budget: DescriptorBudget) -> None:
        self._registry.register(_DescriptorMetrics(budget))

    def watch_partitions(self, summary: Callable[[], PartitionSummary]) -> None:
        self._registry.register(_PartitionGauges(summary))

    def watch_log_dirs(self, directories) -> None:
        """One series per log directory (logdirs/log_dirs.py), read when Prometheus scrapes."""
        for directory in directories:
            self.log_dir_online.labels(str(directory.path)).set_function(lambda d=directory: 1 if d.online else 0)
        self._registry.register(_LogDirSpace(directories))

    def watch_groups(self, rows: Callable[[], list[GroupRow]]) -> None:
        self._registry.register(_GroupGauges(rows))


class _DescriptorMetrics(Collector):
    def __init__(self, budget: DescriptorBudget) -> None:
        self._budget = budget

    def collect(self):
        yield t.BROKER_LOG_DESCRIPTORS_OPEN.family(self._budget.open_count)
        yield t.BROKER_LOG_DESCRIPTORS_MAX.family(self._budget.descriptors_max)
        yield t.BROKER_LOG_DESCRIPTORS_GIVEN_BACK.family(self._budget.logs_released)


class _LogDirSpace(Collector):
    """Free space and reserve of each log directory, measured when scraped (one statvfs each)."""

    def __init__(self, directories) -> None:
        self._directories = tuple(directories)

    def collect(self):
        free, reserve = t.BROKER_LOG_DIR_FREE.family(), t.BROKER_LOG_DIR_RESERVE.family()
        for directory in self._directories:
            label = [str(directory.path)]
            reserve.add_metric(label, directory.space.free_bytes_min)
            try:
                st = os.statvfs(directory.path)
            except OSError:
                continue  # an offline or missing directory: replog_broker_log_dir_online says so
            free.add_metric(label, st.f_bavail * st.f_frsize)
        yield from (free, reserve)


@dataclass(frozen=True)
class GroupRow:
    """One coordinated group at scrape time; lag only for partitions hosted on this broker."""

    group_id: str
    members: int
    generation_id: int
    lags: tuple[tuple[str, int, int], ...] = ()  # (topic, partition, HW - committed offset)


class _GroupGauges(Collector):
    def __init__(self, rows: Callable[[], list[GroupRow]]) -> None:
        self._rows = rows

    def collect(self):
        members = t.BROKER_GROUP_MEMBERS.family()
        generation = t.BROKER_GROUP_GENERATION.family()
        lag = t.BROKER_GROUP_LAG.family()
        for row in self._rows():
            members.add_metric([row.group_id], row.members)
            generation.add_metric([row.group_id], row.generation_id)
            for topic, partition, records in row.lags:
                lag.add_metric([row.group_id, topic, str(partition)], records)
        yield from (members, generation, lag)
