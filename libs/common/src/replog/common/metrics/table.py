"""The one table of every Prometheus metric replog exports.

Theory of operation
-------------------
Each row (`Metric`) names a metric family as Prometheus scrapes it, its type, its help text and
its labels. The services build their counters, gauges and histograms from these rows (`create`,
or `family` for values computed when Prometheus scrapes), so the code cannot export a name, a
type or a label the table does not hold; docs/metrics.md and the Grafana dashboard
(deploy/grafana/replog-dashboard.json) are generated from the table by docs/generate.py, and the
alert rules in deploy/prometheus/ are checked against it (tests/unit/test_metric_table.py).

The conventions every row keeps (Prometheus' naming; `check_conventions` enforces them):

- a service's own metrics start `replog_<service>_`; those every process serves start `replog_`
  followed by their subject (`replog_zookeeper_`, `replog_tls_`);
- base units, named last: `_seconds`, `_bytes`; a point in time is `_timestamp_seconds`;
- a counter ends in `_total`, and nothing else does; no gauge ends in `_count`, `_sum` or
  `_bucket`, which belong to histograms;
- an `_info` metric is always 1 and carries facts in its labels;
- every label name is in LABELS, with one meaning wherever it appears.

Adding a metric: add a row below, build it where it is measured (`create`), run `make docs`.
A renamed metric keeps its old name in RENAMED for one release, so that docs/metrics.md tells
dashboards and alerts what to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

COUNTER, GAUGE, HISTOGRAM, INFO = "counter", "gauge", "histogram", "info"

# Every label a replog metric carries, and what its values are. Prometheus adds `job` and
# `instance` when it scrapes; the local cluster's target list adds `role` and `process`.
LABELS = {
    "acks": "the produce request's acks: `0`, `1`, `-1` (all), or `invalid`",
    "kind": "who fetched: `consumer` or `follower`",
    "error": "an error code's name, as in common.proto's `ErrorCode` without its `ERROR_CODE_` prefix",
    "event": "the controller event's type (`BrokersChanged`, `AlterPartitionReceived`, ...)",
    "log_dir": "a log directory's path, as configured (`log_dir` or one of `log_dirs`)",
    "group": "a consumer group's id",
    "topic": "a topic's name",
    "partition": "a partition's number",
    "certificate": "`process` (the process's own certificate) or `ca` (the CA certificate it trusts)",
    "broker_id": "the broker's id",
    "controller_id": "the controller's id",
    "gateway_id": "the gateway's id",
    "rack": "the broker's rack (empty without one)",
    "version": "the replog release the process runs",
    "quota": "the client quota: `produce` (producer_byte_rate) or `fetch` (consumer_byte_rate)",
    "method": "the AdminService method a request called (`CreateTopic`, `ElectLeaders`, ...)",
    "code": "the gRPC status code a request was answered with, as grpc.StatusCode names it (`INVALID_ARGUMENT`, "
            "`UNAVAILABLE`, ...)",
    "generation": "the garbage collector's generation a collection covered: `0`, `1` or `2` (2 is a full collection)",
}

# Dashboard rows, in order (deploy/grafana/replog-dashboard.json).
SECTIONS = ("Cluster", "Controller", "ISR and replication", "Produce and fetch", "Storage", "Consumer groups",
            "Admin gateway", "Processes")

# Histogram buckets, in seconds.
REQUEST_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 5, 30)
CONTROLLER_BUCKETS_S = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10)
# Stop-the-world pauses: fine around the 20 ms a pause may take at most (docs/perf/scale.md).
GC_PAUSE_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
                      0.5, 1, 2, 5)


@dataclass(frozen=True)
class Metric:
    name: str  # as scraped: counters with their `_total`, info metrics with their `_info`
    kind: str
    help: str
    labels: tuple[str, ...] = ()
    section: str = "Processes"
    buckets: tuple[float, ...] = ()  # histograms only
    chart: str = ""  # the dashboard's query, when the default for its kind does not fit

    @property
    def service(self) -> str:
        """The program that exports it, or "every service"."""
        for program in ("broker", "controller", "gateway"):
            if self.name.startswith(f"replog_{program}_"):
                return f"replog-{program}"
        return "every service"

    @property
    def base_name(self) -> str:
        """The name prometheus_client is given (it appends `_total` and `_info` itself)."""
        if self.kind == COUNTER:
            return self.name.removesuffix("_total")
        if self.kind == INFO:
            return self.name.removesuffix("_info")
        return self.name

    def create(self, registry: CollectorRegistry):
        """The prometheus_client metric of this row, registered in `registry`."""
        kinds = {COUNTER: Counter, GAUGE: Gauge, HISTOGRAM: Histogram, INFO: Info}
        options = {"buckets": self.buckets} if self.kind == HISTOGRAM else {}
        labels = () if self.kind == INFO else self.labels  # an info metric's labels are its value
        return kinds[self.kind](self.base_name, self.help, labels, registry=registry, **options)

    def family(self, value: float | None = None):
        """A family to fill when Prometheus scrapes (a Collector's `collect`): gauges and counters."""
        kinds = {GAUGE: GaugeMetricFamily, COUNTER: CounterMetricFamily}
        if value is not None:
            return kinds[self.kind](self.base_name, self.help, value=value)
        return kinds[self.kind](self.base_name, self.help, labels=list(self.labels))


_rows: list[Metric] = []


def _row(name: str, kind: str, help: str, labels: tuple[str, ...] = (), **options) -> Metric:
    metric = Metric(name, kind, help, labels, **options)
    _rows.append(metric)
    return metric


# --- replog-controller -------------------------------------------------------------------------

CONTROLLER_ACTIVE = _row(
    "replog_controller_active", GAUGE, "1 while this controller holds the seat (Kafka's ActiveControllerCount); "
    "the cluster's sum must be exactly 1", section="Cluster", chart="sum(replog_controller_active)")
CONTROLLER_OFFLINE_PARTITIONS = _row(
    "replog_controller_offline_partitions", GAUGE, "partitions without a live leader, as the controller last "
    "computed them (a controller that lost its seat keeps its last count: weigh by replog_controller_active)",
    section="Cluster", chart="sum(replog_controller_offline_partitions * replog_controller_active)")
CONTROLLER_GLOBAL_PARTITIONS = _row(
    "replog_controller_global_partitions", GAUGE, "partitions in the cluster", section="Cluster",
    chart="sum(replog_controller_global_partitions * replog_controller_active)")
CONTROLLER_EVENT_QUEUE_SIZE = _row(
    "replog_controller_event_queue_size", GAUGE, "events waiting for the controller loop", section="Controller")
CONTROLLER_EVENT_QUEUE_WAIT = _row(
    "replog_controller_event_queue_wait_seconds", HISTOGRAM, "time events wait in the queue", section="Controller",
    buckets=CONTROLLER_BUCKETS_S)
CONTROLLER_EVENT_PROCESSING = _row(
    "replog_controller_event_processing_seconds", HISTOGRAM, "time to decide and execute an event", ("event",),
    section="Controller", buckets=CONTROLLER_BUCKETS_S)
CONTROLLER_LEADER_ELECTIONS = _row(
    "replog_controller_leader_elections_total", COUNTER, "leader elections (Kafka's LeaderElectionRate)",
    section="Controller")
CONTROLLER_LEADER_ELECTION = _row(
    "replog_controller_leader_election_seconds", HISTOGRAM, "time of the events that elected leaders",
    section="Controller", buckets=CONTROLLER_BUCKETS_S)
CONTROLLER_UNCLEAN_LEADER_ELECTIONS = _row(
    "replog_controller_unclean_leader_elections_total", COUNTER, "unclean leader elections (records acknowledged "
    "before may be lost)", section="Controller")
CONTROLLER_LOSSY_LEADER_ELECTIONS = _row(
    "replog_controller_lossy_leader_elections_total", COUNTER, "leaders elected from an ISR whose every live member "
    "lost committed records in an unclean shutdown (those records are gone)", section="Controller")
CONTROLLER_ISR_SHRINKS = _row(
    "replog_controller_isr_shrinks_total", COUNTER, "ISR shrinks committed", section="ISR and replication")
CONTROLLER_ISR_EXPANDS = _row(
    "replog_controller_isr_expands_total", COUNTER, "ISR expansions committed", section="ISR and replication")
CONTROLLER_FAILED_ISR_UPDATES = _row(
    "replog_controller_failed_isr_updates_total", COUNTER, "AlterPartition proposals refused",
    section="ISR and replication")

# --- replog-broker -----------------------------------------------------------------------------

BROKER_REPLICAS = _row(
    "replog_broker_replicas", GAUGE, "replicas hosted (Kafka's PartitionCount)", section="Cluster")
BROKER_LEADER_PARTITIONS = _row(
    "replog_broker_leader_partitions", GAUGE, "partitions this broker leads (Kafka's LeaderCount)", section="Cluster")
BROKER_UNDER_REPLICATED = _row(
    "replog_broker_under_replicated_partitions", GAUGE, "led partitions whose ISR is smaller than the assignment",
    section="Cluster")
BROKER_UNDER_MIN_ISR = _row(
    "replog_broker_under_min_isr_partitions", GAUGE, "led partitions whose ISR is below min.insync.replicas "
    "(acks=all produce is refused)", section="Cluster")
BROKER_AT_MIN_ISR = _row(
    "replog_broker_at_min_isr_partitions", GAUGE, "led partitions whose ISR is exactly min.insync.replicas",
    section="Cluster")
BROKER_OFFLINE_REPLICAS = _row(
    "replog_broker_offline_replicas", GAUGE, "hosted replicas of partitions without a leader", section="Cluster")
BROKER_ISR_SHRINKS = _row(
    "replog_broker_isr_shrinks_total", COUNTER, "ISR shrinks the controller accepted", section="ISR and replication")
BROKER_ISR_EXPANDS = _row(
    "replog_broker_isr_expands_total", COUNTER, "ISR expansions the controller accepted",
    section="ISR and replication")
BROKER_FAILED_ISR_UPDATES = _row(
    "replog_broker_failed_isr_updates_total", COUNTER, "AlterPartition proposals refused or not answered",
    section="ISR and replication")
BROKER_FOLLOWER_TRUNCATIONS = _row(
    "replog_broker_follower_truncations_total", COUNTER, "follower log truncations", section="ISR and replication")
BROKER_REPLICATED_BYTES = _row(
    "replog_broker_replicated_bytes_total", COUNTER, "record bytes appended as follower",
    section="ISR and replication")
BROKER_PRODUCE_REQUESTS = _row(
    "replog_broker_produce_requests_total", COUNTER, "Produce requests", ("acks",), section="Produce and fetch")
BROKER_PRODUCE_PARTITION_ERRORS = _row(
    "replog_broker_produce_partition_errors_total", COUNTER, "Produce partitions answered with an error", ("error",),
    section="Produce and fetch")
BROKER_PRODUCE_DURATION = _row(
    "replog_broker_produce_duration_seconds", HISTOGRAM, "Produce request time, from arrival to answer", ("acks",),
    section="Produce and fetch", buckets=REQUEST_BUCKETS_S)
BROKER_PRODUCED_BYTES = _row(
    "replog_broker_produced_bytes_total", COUNTER, "record batch bytes appended as leader",
    section="Produce and fetch")
BROKER_FETCH_REQUESTS = _row(
    "replog_broker_fetch_requests_total", COUNTER, "Fetch requests", ("kind",), section="Produce and fetch")
BROKER_FETCH_DURATION = _row(
    "replog_broker_fetch_duration_seconds", HISTOGRAM, "Fetch request time (includes the long-poll wait)", ("kind",),
    section="Produce and fetch", buckets=REQUEST_BUCKETS_S)
BROKER_FETCH_PARTITION_ERRORS = _row(
    "replog_broker_fetch_partition_errors_total", COUNTER, "Fetch partitions answered with an error",
    ("kind", "error"), section="Produce and fetch")
BROKER_FETCHED_BYTES = _row(
    "replog_broker_fetched_bytes_total", COUNTER, "record bytes sent", ("kind",), section="Produce and fetch")
BROKER_PRODUCER_IDS_EXPIRED = _row(
    "replog_broker_producer_ids_expired_total", COUNTER, "idempotent producers forgotten after "
    "producer_id_expiration_ms without a write", section="Produce and fetch")
BROKER_LOG_DIR_ONLINE = _row(
    "replog_broker_log_dir_online", GAUGE, "1 while the log directory takes writes, 0 once a storage error took it "
    "offline", ("log_dir",), section="Storage")
BROKER_LOG_DIR_FREE = _row(
    "replog_broker_log_dir_free_bytes", GAUGE, "bytes free for the broker on the log directory's file system, "
    "measured when scraped", ("log_dir",), section="Storage")
BROKER_LOG_DIR_RESERVE = _row(
    "replog_broker_log_dir_reserve_bytes", GAUGE, "free space the log directory keeps (log_dir_free_bytes_min): "
    "below it a leader refuses produce (0: no reserve)", ("log_dir",), section="Storage")
BROKER_UNCLEAN_START = _row(
    "replog_broker_unclean_start", GAUGE, "1 if the broker started without its clean-shutdown marker (a crash or "
    "power loss)", section="Storage")
BROKER_RECOVERY_LOST_RECORDS = _row(
    "replog_broker_recovery_lost_records_total", COUNTER, "committed records start-up recovery could not find (log "
    "end below the checkpointed high watermark)", section="Storage")
BROKER_RECOVERY_LOST_PARTITIONS = _row(
    "replog_broker_recovery_lost_partitions", GAUGE, "replicas whose recovered log ended below their checkpointed "
    "high watermark at start", section="Storage")
BROKER_SCRUB_CORRUPT_SEGMENTS = _row(
    "replog_broker_scrub_corrupt_segments_total", COUNTER, "rolled segments the scrubber found damaged",
    section="Storage")
BROKER_RETENTION_SEGMENTS_DELETED = _row(
    "replog_broker_retention_segments_deleted_total", COUNTER, "log segments retention deleted (retention.ms, "
    "retention.bytes)", section="Storage")
BROKER_RETENTION_ROUND = _row(
    "replog_broker_retention_round_seconds", HISTOGRAM, "time one retention round took on the checkpointer thread",
    section="Storage", buckets=REQUEST_BUCKETS_S)
BROKER_CLEANER_BYTES_CLEANED = _row(
    "replog_broker_cleaner_cleaned_bytes_total", COUNTER, "bytes of compacted logs' segments the log cleaner read "
    "and rewrote (cleanup.policy=compact)", section="Storage")
BROKER_CLEANER_RECORDS_REMOVED = _row(
    "replog_broker_cleaner_removed_records_total", COUNTER, "records the log cleaner removed: superseded by a later "
    "record of their key, or tombstones past delete.retention.ms", section="Storage")
BROKER_CLEANER_DIRTY_RATIO = _row(
    "replog_broker_cleaner_max_dirty_ratio", GAUGE, "the largest share of a compacted log's rolled segments not "
    "cleaned yet, as the log cleaner last saw it (a log is cleaned from min.cleanable.dirty.ratio)", section="Storage")
BROKER_CLEANER_LAG = _row(
    "replog_broker_cleaner_lag_seconds", GAUGE, "how long the oldest record not cleaned yet of a compacted log has "
    "waited, the largest over the logs, as the log cleaner last saw it", section="Storage")
BROKER_QUOTA_THROTTLED_REQUESTS = _row(
    "replog_broker_quota_throttled_requests_total", COUNTER, "client requests answered with a throttle time: their "
    "user went over its client quota, or they arrived while it was throttled (docs/quotas.md)", ("quota",),
    section="Produce and fetch")
BROKER_QUOTA_REFUSED_REQUESTS = _row(
    "replog_broker_quota_refused_requests_total", COUNTER, "client requests that arrived while their user was "
    "throttled (a client not waiting out the throttle time): a produce refused, a fetch answered empty", ("quota",),
    section="Produce and fetch")
BROKER_QUOTA_THROTTLE_TIME = _row(
    "replog_broker_quota_throttle_time_seconds", HISTOGRAM, "throttle time of each throttled answer (the time left, "
    "for one that arrived while throttled)", ("quota",), section="Produce and fetch",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
BROKER_OUT_OF_DESCRIPTORS = _row(
    "replog_broker_out_of_descriptors_total", COUNTER, "log directory operations that failed with EMFILE or ENFILE "
    "(nothing written; the append is answered with a retriable error, a checkpoint retried)", section="Storage")
BROKER_LOG_DESCRIPTORS_OPEN = _row(
    "replog_broker_log_descriptors_open", GAUGE, "segment file descriptors the hosted logs hold", section="Storage")
BROKER_LOG_DESCRIPTORS_MAX = _row(
    "replog_broker_log_descriptors_max", GAUGE, "the descriptors the hosted logs may hold: the soft RLIMIT_NOFILE "
    "less headroom", section="Storage")
BROKER_LOG_DESCRIPTORS_GIVEN_BACK = _row(
    "replog_broker_log_descriptors_given_back_total", COUNTER, "logs whose descriptors were closed to keep within "
    "log_descriptors_max (least recently used first)", section="Storage")
BROKER_GROUP_MEMBERS = _row(
    "replog_broker_group_members", GAUGE, "members of each group this broker coordinates", ("group",),
    section="Consumer groups")
BROKER_GROUP_GENERATION = _row(
    "replog_broker_group_generation", GAUGE, "current generation of each coordinated group", ("group",),
    section="Consumer groups")
BROKER_GROUP_LAG = _row(
    "replog_broker_group_lag", GAUGE, "records between a coordinated group's committed offset and the high "
    "watermark, for partitions hosted on this broker", ("group", "topic", "partition"), section="Consumer groups",
    chart="sum by (group, topic) (replog_broker_group_lag)")
BROKER_GROUP_REBALANCES = _row(
    "replog_broker_group_rebalances_total", COUNTER, "rebalances completed (assignment stored) by groups this broker "
    "coordinates", section="Consumer groups")
BROKER_GROUP_REBALANCE = _row(
    "replog_broker_group_rebalance_seconds", HISTOGRAM, "time from a group's rebalance start to its assignment "
    "being stored", section="Consumer groups", buckets=REQUEST_BUCKETS_S)
BROKER_GROUP_OFFSET_COMMITS = _row(
    "replog_broker_group_offset_commits_total", COUNTER, "offsets stored by this coordinator (one per partition "
    "committed)", section="Consumer groups")

# --- replog-gateway ----------------------------------------------------------------------------

GATEWAY_REQUESTS = _row(
    "replog_gateway_requests_total", COUNTER, "AdminService requests the gateway's handlers ran (after "
    "authorization)", ("method",), section="Admin gateway")
GATEWAY_REQUEST_ERRORS = _row(
    "replog_gateway_request_errors_total", COUNTER, "AdminService requests answered with an error status (a "
    "refusal, ZooKeeper unavailable, or UNKNOWN for a bug)", ("method", "code"), section="Admin gateway")

# --- every service -----------------------------------------------------------------------------

BROKER_INFO = _row(
    "replog_broker_info", INFO, "the broker's id, rack and release", ("broker_id", "rack", "version"))
CONTROLLER_INFO = _row(
    "replog_controller_info", INFO, "the controller's id and release", ("controller_id", "version"))
GATEWAY_INFO = _row(
    "replog_gateway_info", INFO, "the gateway's id and release", ("gateway_id", "version"))
ZOOKEEPER_CONNECTED = _row(
    "replog_zookeeper_connected", GAUGE, "1 while the process's ZooKeeper session is connected (0 while it waits "
    "for ZooKeeper or its connection is suspended)")
ZOOKEEPER_SESSION_EXPIRATIONS = _row(
    "replog_zookeeper_session_expirations_total", COUNTER, "ZooKeeper sessions this process lost (expired): its "
    "ephemeral znodes went with them (a broker's registration, a controller's seat)")
GC_PAUSE = _row(
    "replog_gc_pause_seconds", HISTOGRAM, "collections of the cyclic garbage collector, by the oldest generation "
    "each covered: every thread of the process stands still while one runs", ("generation",),
    buckets=GC_PAUSE_BUCKETS_S)
TLS_CERTIFICATE_EXPIRY = _row(
    "replog_tls_certificate_expiry_timestamp_seconds", GAUGE, "when a certificate the process uses stops being "
    "valid (its notAfter), read from its file when scraped", ("certificate",))

TABLE: tuple[Metric, ...] = tuple(_rows)
BY_NAME: dict[str, Metric] = {m.name: m for m in TABLE}

# Names of the last release, and what replaced them (docs/metrics.md, "Renamed metrics"). Remove
# a row one release after its rename.
RENAMED = {
    "replog_controller_active_controller_count": "replog_controller_active",
    "replog_controller_offline_partitions_count": "replog_controller_offline_partitions",
    "replog_controller_global_partition_count": "replog_controller_global_partitions",
    "replog_controller_event_queue_time_ms": "replog_controller_event_queue_wait_seconds",
    "replog_controller_event_processing_time_ms": "replog_controller_event_processing_seconds",
    "replog_controller_leader_election_time_ms": "replog_controller_leader_election_seconds",
    "replog_broker_partition_count": "replog_broker_replicas",
    "replog_broker_leader_count": "replog_broker_leader_partitions",
    "replog_broker_under_min_isr_partition_count": "replog_broker_under_min_isr_partitions",
    "replog_broker_at_min_isr_partition_count": "replog_broker_at_min_isr_partitions",
    "replog_broker_offline_replica_count": "replog_broker_offline_replicas",
    "replog_broker_bytes_in_total": "replog_broker_produced_bytes_total",
    "replog_broker_bytes_out_total": "replog_broker_fetched_bytes_total",
    "replog_broker_replication_bytes_in_total": "replog_broker_replicated_bytes_total",
    "replog_broker_produce_latency_ms": "replog_broker_produce_duration_seconds",
    "replog_broker_fetch_latency_ms": "replog_broker_fetch_duration_seconds",
    "replog_broker_retention_round_ms": "replog_broker_retention_round_seconds",
    "replog_broker_group_rebalance_ms": "replog_broker_group_rebalance_seconds",
    "replog_broker_log_descriptors_given_back": "replog_broker_log_descriptors_given_back_total",
}
# Labels renamed in the same release: (metric, old label, new label).
RENAMED_LABELS = (("replog_broker_log_dir_online", "dir", "log_dir"),)

_NAME = re.compile(r"^replog_[a-z][a-z0-9_]*[a-z0-9]$")
_ABBREVIATED_UNITS = re.compile(r"_(ms|us|ns|s|sec|secs|b|kb|mb|pct|percent)(_|$)")


def check_conventions(metric: Metric) -> list[str]:
    """What breaks the conventions of the module docstring in `metric` (empty when nothing)."""
    problems = []
    name = metric.name
    if not _NAME.match(name):
        problems.append("not a replog_ snake_case name")
    if _ABBREVIATED_UNITS.search(name):
        problems.append("an abbreviated unit (use base units: _seconds, _bytes)")
    if (metric.kind == COUNTER) != name.endswith("_total"):
        problems.append("counters, and only counters, end in _total")
    if (metric.kind == INFO) != name.endswith("_info"):
        problems.append("info metrics, and only they, end in _info")
    if metric.kind != HISTOGRAM and re.search(r"_(count|sum|bucket)$", name):
        problems.append("_count, _sum and _bucket are a histogram's series")
    if (metric.kind == HISTOGRAM) != bool(metric.buckets):
        problems.append("histograms, and only they, have buckets")
    if metric.kind == HISTOGRAM and not name.endswith(("_seconds", "_bytes")):
        problems.append("a histogram's name ends in its base unit")
    unknown = [label for label in metric.labels if label not in LABELS]
    if unknown:
        problems.append(f"labels not in LABELS: {unknown}")
    if metric.section not in SECTIONS:
        problems.append(f"section {metric.section!r} not in SECTIONS")
    if not metric.help:
        problems.append("no help text")
    return problems
