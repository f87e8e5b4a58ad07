"""The broker's configuration keys (the one owner of each; the TLS keys are
security/settings.py's, shared by every service, the address keys listen.py's)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from replog.broker.core.produce.producer_state import (
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    PRODUCER_IDS_MAX_DEFAULT,
    ProducerStateLimits,
)
from replog.broker.quotas.settings import QuotaSettings
from replog.common.acls.settings import AclSettings
from replog.common import ports
from replog.common.edge.settings import EdgeSettings
from replog.common.config import between, non_negative, one_of, positive, setting, tcp_port, zookeeper_connect
from replog.common.listen import AdvertiseSettings
from replog.common.security.settings import TlsSettings
from replog.common.zk.auth import credentials_file_setting
from replog.common.zk.tls import ZkTlsSettings

# A leader keeps a fetch session per fetcher of each follower, and refuses fetcher ids past this.
REPLICA_FETCHERS_MAX = 16
# The largest a partition's entry in a controller request can be: a topic name of the longest
# allowed (249 characters) with the state's numbers and a few replica lists.
PARTITION_STATE_BYTES_MAX = 320
# The largest value of a 64-bit signed integer, as Kafka bounds its retention settings.
LONG_MAX = 2**63 - 1
# Room for everything in a request besides its record batch or partition entries (fields, framing).
REQUEST_HEADROOM_BYTES = 1024 * 1024


def _split_dirs(value: str) -> list[str]:
    return [part.strip() for part in value.split(",")]


def log_dir_list(value: str) -> str | None:
    if not value:
        return None
    parts = _split_dirs(value)
    if any(not part for part in parts):
        return "an empty entry in the comma-separated list"
    if len(set(parts)) != len(parts):
        return "a directory listed twice"
    return None


log_dir_list.rule = "comma-separated, no empty or repeated entry"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class BrokerConfig(TlsSettings, ZkTlsSettings, AclSettings, EdgeSettings, QuotaSettings, AdvertiseSettings):
    broker_id: int = setting(1, "id of this broker, unique in the cluster", non_negative)
    zookeeper: str = setting("127.0.0.1:2181", "ZooKeeper connect string host:port[,host:port][/chroot]",
                             zookeeper_connect)
    zookeeper_credentials_file: str = credentials_file_setting()
    port: int = setting(ports.BROKER.grpc, "gRPC port (0 picks a free one)", tcp_port)
    kafka_port: int = setting(
        ports.BROKER_KAFKA, "port of the Kafka wire-protocol listener (docs/kafka-compatibility.md), on the same "
        "host and with the same TLS as the gRPC port (0 picks a free one, -1: no listener)", between(-1, 65535))
    kafka_connections_max: int = setting(
        1000, "Kafka client connections served at once (one thread each); more are closed at accept", positive)
    kafka_principal_connections_max: int = setting(
        0, "Kafka client connections one identity may hold at once (super users apart); more are closed after "
           "the TLS handshake. 0: a quarter of kafka_connections_max", non_negative)
    kafka_connections_max_idle_ms: int = setting(
        600_000, "a Kafka client connection that sends no request for this long is closed (Kafka's "
                 "connections.max.idle.ms); a TLS handshake must end within 10 s of the connection", positive)
    rack: str = setting("", "rack (failure domain) label; empty when rack-unaware")
    log_dir: str = setting("./data/broker", "directory holding this broker's partition logs and checkpoints, "
                                            "when log_dirs is empty")
    log_dirs: str = setting(
        "", "comma-separated directories (one per disk) holding this broker's partition logs, each with its own "
            "checkpoints (Kafka's log.dirs); replaces log_dir when set. A new replica goes to the online one with "
            "the fewest replicas; a storage error takes only its directory offline while another is online",
        log_dir_list)
    metrics_port: int = setting(ports.BROKER.metrics, "Prometheus /metrics port (0 picks a free one)", tcp_port)
    zookeeper_session_timeout_ms: int = setting(6000, "ZooKeeper session timeout", positive)
    zookeeper_connect_backoff_max_ms: int = setting(
        2000, "longest pause between attempts to reach ZooKeeper, at start and after losing it "
              "(the process waits for ZooKeeper as long as it takes, NOT_SERVING meanwhile)", positive)
    trace_dir: str = setting("", "directory for JSON-lines span files, written also while OTEL_EXPORTER_OTLP_ENDPOINT "
                             "sends spans to a collector (empty: no files)")
    log_level: str = setting("info", "log level", one_of("debug", "info", "warning", "error"))
    log_format: str = setting("json", "log line format: json (one object per line) or text; a line written inside a "
                              "span carries its trace_id and span_id", one_of("json", "text"))
    replica_lag_time_max_ms: int = setting(10000, "a follower not caught up for this long leaves the ISR", positive)
    replica_fetch_wait_max_ms: int = setting(500, "longest a follower's fetch waits at the leader", positive)
    replica_fetch_max_bytes: int = setting(8 * 1024 * 1024, "bytes a follower fetches per request at most", positive)
    num_replica_fetchers: int = setting(
        1, "fetchers (threads, each with its own stream and session) per leader broker followed; a partition "
           "always uses the same one. 2 shortens a large failover (see fetcher_manager.py)",
        between(1, REPLICA_FETCHERS_MAX))
    min_insync_replicas: int = setting(1, "default min.insync.replicas for topics without their own", positive)
    segment_bytes: int = setting(64 * 1024 * 1024, "log segment size before rolling", positive)
    message_max_bytes: int = setting(1024 * 1024, "largest record batch accepted (max.message.bytes of topics "
                                                   "without their own)", positive)
    log_retention_ms: int = setting(
        7 * 24 * 3600 * 1000, "retention.ms of topics without their own: a rolled segment whose newest record is "
                              "older is deleted (-1: kept however old)", between(-1, LONG_MAX))
    log_retention_bytes: int = setting(
        -1, "retention.bytes of topics without their own: the oldest segments are deleted while a partition "
            "stays above this size (-1: no limit)", between(-1, LONG_MAX))
    log_roll_ms: int = setting(7 * 24 * 3600 * 1000, "segment.ms of topics without their own: the active segment "
                                                       "rolls once it is this old", positive)
    log_retention_check_interval_ms: int = setting(
        300000, "how often every hosted partition is checked for segments retention deletes", positive)
    log_retention_partitions_per_round_max: int = setting(
        200, "partitions the checkpointer thread checks for retention in one round (one a second, or per "
             "flush interval); a check of more is spread over the next rounds, so produce never waits on "
             "one long pass (10,000 partitions: a pass of 50 s)", positive)
    log_cleanup_policy: str = setting(
        "delete", "cleanup.policy of topics without their own: delete (retention), compact (the log cleaner keeps "
                  "the latest record of each key) or compact,delete", one_of("delete", "compact", "compact,delete"))
    log_cleaner_min_cleanable_ratio: float = setting(
        0.5, "min.cleanable.dirty.ratio of topics without their own: a compacted log is cleaned once the part not "
             "cleaned yet is this share of its rolled segments", between(0, 1))
    log_cleaner_min_compaction_lag_ms: int = setting(
        0, "min.compaction.lag.ms of topics without their own: a record younger than this is not cleaned yet",
        between(0, LONG_MAX))
    log_cleaner_max_compaction_lag_ms: int = setting(
        LONG_MAX, "max.compaction.lag.ms of topics without their own: a log whose oldest uncleaned record is older "
                  "is cleaned whatever its dirty ratio", between(1, LONG_MAX))
    log_cleaner_delete_retention_ms: int = setting(
        24 * 3600 * 1000, "delete.retention.ms of topics without their own: a tombstone (a record with a null value) "
                          "stays this long after its timestamp before the cleaner removes it", between(0, LONG_MAX))
    log_cleaner_enable: bool = setting(True, "run the log cleaner, which compacts topics with cleanup.policy=compact")
    log_cleaner_io_max_bytes_per_second: int = setting(
        10 * 1024 * 1024, "how fast the log cleaner reads and writes segments at most (0: no limit)", non_negative)
    log_cleaner_keys_max: int = setting(
        1_000_000, "keys the cleaner's key-to-offset map holds in one pass (about 60 bytes each); a dirty part with "
                   "more is cleaned over several passes", positive)
    log_cleaner_backoff_ms: int = setting(
        5000, "how long the log cleaner waits when no compacted log needs cleaning", positive)
    log_dir_free_bytes_min: int = setting(
        64 * 1024 * 1024, "free space the log directory keeps: below it a leader refuses produce with STORAGE_ERROR "
                          "(measured once a checkpointer round) rather than meet a full disk, which takes the "
                          "directory offline, and stops the broker when it was its last online one (0: no reserve)",
        non_negative)
    log_dir_fsync_stall_max_ms: int = setting(
        30000, "a probe fsyncs a small file in the log directory every third of this; an fsync that does not "
               "return within it is a storage error: the directory goes offline (the broker stops if it was its "
               "last online one), so another replica leads (0: no probe)", non_negative)
    log_scrub_bytes_per_second: int = setting(
        1024 * 1024, "how fast the scrubber verifies rolled segments (CRC and records) to find bit rot before a "
                     "reader does; a follower refetches a damaged segment from its leader, a leader gives up the "
                     "partition's leadership first (0: no scrubbing)",
        non_negative)
    flush_messages: int = setting(0, "fsync after this many records (0: not by count)", non_negative)
    flush_interval_ms: int = setting(0, "fsync at least this often (0: not by time)", non_negative)
    fsync_acks_all: bool = setting(
        False, "the durable mode for every topic, as flush.messages=1: leader and followers fsync each appended "
        "batch before it counts toward the high watermark")
    request_timeout_ms: int = setting(30000, "default produce timeout for acks=all", positive)
    group_min_session_timeout_ms: int = setting(
        1000, "shortest session timeout a consumer group member may ask for (INVALID_SESSION_TIMEOUT below)", positive)
    group_max_session_timeout_ms: int = setting(
        300000, "longest session timeout a consumer group member may ask for (INVALID_SESSION_TIMEOUT above)",
        positive)
    group_initial_rebalance_delay_ms: int = setting(
        3000, "an empty group waits this long (longer as members keep arriving, up to the rebalance timeout) "
              "before its first rebalance completes, so members started together form one generation",
        non_negative)
    group_max_size: int = setting(1000, "most members a consumer group may have (GROUP_MAX_SIZE_REACHED beyond)",
                                  positive)
    offsets_topic_num_partitions: int = setting(
        12, "partitions of __consumer_offsets when a broker creates it (the first FindCoordinator of a cluster "
            "without it); fixed once the topic exists, since each group's partition is derived from it", positive)
    offsets_topic_replication_factor: int = setting(
        3, "replication factor of __consumer_offsets when a broker creates it; capped (with a warning logged) at "
           "the brokers live at that moment", positive)
    offsets_topic_segment_bytes: int = setting(
        100 * 1024 * 1024, "segment.bytes of __consumer_offsets when a broker creates it: the log cleaner compacts "
                           "only rolled segments, so this bounds what a partition holds beyond its live keys",
        between(14, 2**31 - 1))
    controlled_shutdown_enable: bool = setting(True, "on SIGTERM ask the controller to move leadership away first")
    replica_high_watermark_checkpoint_interval_ms: int = setting(
        5000, "how often the HW and recovery-point checkpoint files are rewritten", positive)
    fetch_max_bytes: int = setting(8 * 1024 * 1024, "bytes a consumer Fetch returns at most", positive)
    grpc_workers: int = setting(128, "gRPC handler threads (long-polls and acks=-1 waits each hold one; "
                                     "16 are kept for replication and the controller)", positive)
    grpc_concurrent_rpcs_max: int = setting(
        2048, "RPCs open at once, streams and every client's channel keeper included; more are refused with "
              "RESOURCE_EXHAUSTED (each may hold a request of up to the receive limit in memory)", positive)
    request_partitions_max: int = setting(
        200000, "partitions one request may name (LeaderAndIsr, StopReplica, UpdateMetadata, replica and "
                "consumer fetches, produce); more are refused with INVALID_ARGUMENT. The controller does not "
                "split its requests: keep this above the cluster's partition count. It also sets the "
                "largest message received: this many times 320 bytes, or message_max_bytes if larger, "
                "plus 1 MiB; a larger one is refused with RESOURCE_EXHAUSTED", positive)

    producer_id_expiration_ms: int = setting(
        PRODUCER_ID_EXPIRATION_MS_DEFAULT, "a partition that tracks producer_ids_max idempotent producers forgets "
        "those that have not written to it for this long (by their batches' timestamps) to make room for new ones "
        "(Kafka's producer.id.expiration.ms); below that bound it forgets no one. Keep it far above any "
        "producer's delivery timeout", positive)
    producer_id_expiration_check_interval_ms: int = setting(
        600000, "how often a partition holding producer_ids_max producers forgets those idle for "
                "producer_id_expiration_ms (also done as soon as it refused a new producer)", positive)
    producer_ids_max: int = setting(
        PRODUCER_IDS_MAX_DEFAULT, "idempotent producers one partition tracks at most (a memory bound). A full "
        "partition evicts no one: it forgets producers idle for producer_id_expiration_ms, and while none is, it "
        "refuses a new producer's first batch with PRODUCER_STATE_FULL (logged, counted), so no retried batch is "
        "ever written twice", positive)

def log_directories(config: BrokerConfig) -> list[Path]:
    """The broker's log directories: `log_dirs` when set, else the one `log_dir`."""
    return [Path(part) for part in _split_dirs(config.log_dirs)] if config.log_dirs else [Path(config.log_dir)]


def producer_state_limits(config: BrokerConfig) -> ProducerStateLimits:
    return ProducerStateLimits(config.producer_ids_max, config.producer_id_expiration_ms)


def request_bytes_max(config: BrokerConfig) -> int:
    """The gRPC receive limit: the largest request a broker may legitimately get, plus headroom. That is
    a produce request with one batch of `message_max_bytes`, or a controller request naming
    `request_partitions_max` partitions; larger messages are refused with RESOURCE_EXHAUSTED before
    any handler runs."""
    control_bytes = config.request_partitions_max * PARTITION_STATE_BYTES_MAX
    return max(config.message_max_bytes, control_bytes) + REQUEST_HEADROOM_BYTES
