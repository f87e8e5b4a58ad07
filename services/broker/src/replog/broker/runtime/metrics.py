"""The broker's Prometheus metrics (docs/metrics.md), named `replog_broker_*` after Kafka's.

Built by bootstrap (nothing at import time). Partition gauges are computed
when Prometheus scrapes, from a summary the replica manager supplies, so they
can never drift from the replicas themselves. Counters and histograms are per
request or per ISR change, never per record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from replog.broker.log.descriptors import DescriptorBudget

LATENCY_BUCKETS_MS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 30000)
THROTTLE_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


@dataclass(frozen=True)
class PartitionSummary:
    partition_count: int = 0
    leader_count: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0
    offline_replicas: int = 0


_GAUGES = (
    ("replog_broker_partition_count", "replicas hosted (PartitionCount)", "partition_count"),
    ("replog_broker_leader_count", "partitions this broker leads (LeaderCount)", "leader_count"),
    ("replog_broker_under_replicated_partitions", "led partitions whose ISR is smaller than the assignment",
     "under_replicated"),
    ("replog_broker_under_min_isr_partition_count", "led partitions whose ISR is below min.insync.replicas",
     "under_min_isr"),
    ("replog_broker_at_min_isr_partition_count", "led partitions whose ISR is exactly min.insync.replicas",
     "at_min_isr"),
    ("replog_broker_offline_replica_count", "hosted replicas of partitions without a leader", "offline_replicas"),
)


class _PartitionGauges(Collector):
    def __init__(self, summary: Callable[[], PartitionSummary]) -> None:
        self._summary = summary

    def collect(self):
        summary = self._summary()
        for name, documentation, field in _GAUGES:
            yield GaugeMetricFamily(name, documentation, value=getattr(summary, field))


@dataclass(frozen=True)
class FetchKindMetrics:
    """One fetch kind's series, bound once: `labels()` takes a lock and builds a key on every call,
    on the replication path (docs/perf/metrics-binding.md)."""

    requests: Counter
    bytes_out: Counter
    latency_ms: Histogram


@dataclass(frozen=True)
class ProduceAcksMetrics:
    """The produce series of one acks value, bound once (as FetchKindMetrics)."""

    requests: Counter
    latency_ms: Histogram


@dataclass(frozen=True)
class QuotaKindMetrics:
    """The client quota series of one kind (produce or fetch), bound once (as FetchKindMetrics)."""

    throttled: Counter
    refused: Counter
    throttle_seconds: Histogram


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self._registry = registry
        self.scrub_corrupt_segments = Counter(
            "replog_broker_scrub_corrupt_segments", "rolled segments the scrubber found damaged", registry=registry)
        self.isr_shrinks = Counter("replog_broker_isr_shrinks", "ISR shrinks the controller accepted", registry=registry)
        self.isr_expands = Counter("replog_broker_isr_expands", "ISR expansions the controller accepted",
                                   registry=registry)
        self.failed_isr_updates = Counter("replog_broker_failed_isr_updates",
                                          "AlterPartition proposals refused or not answered", registry=registry)
        self.produce_requests = Counter("replog_broker_produce_requests", "Produce requests", ["acks"],
                                        registry=registry)
        self.produce_errors = Counter("replog_broker_produce_partition_errors", "Produce partitions answered with an error",
                                      ["error"], registry=registry)
        self.produce_latency_ms = Histogram("replog_broker_produce_latency_ms", "Produce request time", ["acks"],
                                            buckets=LATENCY_BUCKETS_MS, registry=registry)
        self.bytes_in = Counter("replog_broker_bytes_in", "record batch bytes appended as leader", registry=registry)
        self.fetch_requests = Counter("replog_broker_fetch_requests", "Fetch requests", ["kind"], registry=registry)
        self.fetch_latency_ms = Histogram("replog_broker_fetch_latency_ms", "Fetch request time (includes long-poll)",
                                          ["kind"], buckets=LATENCY_BUCKETS_MS, registry=registry)
        self.bytes_out = Counter("replog_broker_bytes_out", "record bytes sent", ["kind"], registry=registry)
        self.replication_bytes_in = Counter("replog_broker_replication_bytes_in", "record bytes appended as follower",
                                            registry=registry)
        self.truncations = Counter("replog_broker_follower_truncations", "follower log truncations", registry=registry)
        self.unclean_start = Gauge("replog_broker_unclean_start",
                                   "1 if the broker started without its clean-shutdown marker (a crash or power loss)",
                                   registry=registry)
        self.recovery_lost_records = Counter(
            "replog_broker_recovery_lost_records",
            "committed records start-up recovery could not find (log end below the checkpointed high watermark)",
            registry=registry)
        self.recovery_lost_partitions = Gauge("replog_broker_recovery_lost_partitions",
                                              "replicas whose recovered log ended below their checkpointed high "
                                              "watermark at start", registry=registry)
        self.log_dir_online = Gauge("replog_broker_log_dir_online", "1 while the log directory takes writes, 0 once "
                                    "a storage error took it offline", labelnames=["dir"], registry=registry)
        self.producer_ids_expired = Counter(
            "replog_broker_producer_ids_expired",
            "idempotent producers forgotten after producer_id_expiration_ms without a write", registry=registry)
        self.retention_segments_deleted = Counter(
            "replog_broker_retention_segments_deleted",
            "log segments retention deleted (retention.ms, retention.bytes)", registry=registry)
        self.retention_round_ms = Histogram(
            "replog_broker_retention_round_ms", "time one retention round took on the checkpointer thread",
            buckets=LATENCY_BUCKETS_MS, registry=registry)
        self.group_rebalances = Counter(
            "replog_broker_group_rebalances", "rebalances completed (assignment stored) by groups this broker "
            "coordinates", registry=registry)
        self.group_rebalance_ms = Histogram(
            "replog_broker_group_rebalance_ms", "time from a group's rebalance start to its assignment being stored",
            buckets=LATENCY_BUCKETS_MS, registry=registry)
        self.group_offset_commits = Counter(
            "replog_broker_group_offset_commits", "offsets stored by this coordinator (one per partition committed)",
            registry=registry)
        self.out_of_descriptors = Counter(
            "replog_broker_out_of_descriptors", "log directory operations that failed with EMFILE or ENFILE (nothing "
            "written; the append is answered with a retriable error, a checkpoint retried)", registry=registry)
        self.log_descriptors_open = Gauge("replog_broker_log_descriptors_open",
                                          "segment file descriptors the hosted logs hold", registry=registry)
        self.log_descriptors_max = Gauge("replog_broker_log_descriptors_max", "the descriptors the hosted logs may "
                                         "hold: the soft RLIMIT_NOFILE less headroom", registry=registry)
        self.log_descriptors_given_back = Gauge(
            "replog_broker_log_descriptors_given_back", "logs whose descriptors were closed since start to keep "
            "within log_descriptors_max (least recently used first)", registry=registry)
        self.quota_throttled_requests = Counter(
            "replog_broker_quota_throttled_requests_total", "client requests answered with a throttle time: "
            "their user went over its client quota, or they arrived while it was throttled", ["quota"],
            registry=registry)
        self.quota_refused_requests = Counter(
            "replog_broker_quota_refused_requests_total", "client requests that arrived while their user was "
            "throttled (a client not waiting out the throttle time): a produce refused, a fetch answered empty",
            ["quota"], registry=registry)
        self.quota_throttle_seconds = Histogram(
            "replog_broker_quota_throttle_time_seconds", "throttle time of each throttled answer (the time left, "
            "for one that arrived while throttled)", ["quota"], buckets=THROTTLE_BUCKETS_S, registry=registry)
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
        return ProduceAcksMetrics(self.produce_requests.labels(label), self.produce_latency_ms.labels(label))

    def _quota_kind(self, kind: str) -> QuotaKindMetrics:
        return QuotaKindMetrics(self.quota_throttled_requests.labels(kind), self.quota_refused_requests.labels(kind),
                                self.quota_throttle_seconds.labels(kind))

    def _fetch_kind(self, kind: str) -> FetchKindMetrics:
        return FetchKindMetrics(self.fetch_requests.labels(kind), self.bytes_out.labels(kind),
                                self.fetch_latency_ms.labels(kind))

    def watch_descriptors(self, budget: DescriptorBudget) -> None:
        self.log_descriptors_open.set_function(lambda: budget.open_count)
        self.log_descriptors_max.set(budget.descriptors_max)
        self.log_descriptors_given_back.set_function(lambda: budget.logs_released)

    def watch_partitions(self, summary: Callable[[], PartitionSummary]) -> None:
        self._registry.register(_PartitionGauges(summary))

    def watch_log_dirs(self, directories) -> None:
        """One series per log directory (replicas/log_dirs.py), read when Prometheus scrapes."""
        for directory in directories:
            self.log_dir_online.labels(str(directory.path)).set_function(lambda d=directory: 1 if d.online else 0)

    def watch_groups(self, rows: Callable[[], list[GroupRow]]) -> None:
        self._registry.register(_GroupGauges(rows))


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
        members = GaugeMetricFamily("replog_broker_group_members", "members of each group this broker coordinates",
                                    labels=["group"])
        generation = GaugeMetricFamily("replog_broker_group_generation", "current generation of each coordinated group",
                                       labels=["group"])
        lag = GaugeMetricFamily("replog_broker_group_lag", "records between a coordinated group's committed offset "
                                "and the high watermark, for partitions hosted on this broker",
                                labels=["group", "topic", "partition"])
        for row in self._rows():
            members.add_metric([row.group_id], row.members)
            generation.add_metric([row.group_id], row.generation_id)
            for topic, partition, records in row.lags:
                lag.add_metric([row.group_id, topic, str(partition)], records)
        yield from (members, generation, lag)
