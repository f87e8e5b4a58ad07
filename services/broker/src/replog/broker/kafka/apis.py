"""The Kafka APIs the listener serves: key, the versions offered, the first flexible version, and the
request and response schemas (Kafka's clients/src/main/resources/common/message/*.json, written out
in schema.py's notation for the versions offered only).

The versions stop below each API's first flexible version except where an API has no other form
(ApiVersions v3, DescribeCluster v0-1): current librdkafka, the Java client and kafka-python all negotiate
down to what ApiVersions offers. docs/kafka-compatibility.md lists the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.broker.kafka.schema import Array, f


@dataclass(frozen=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    first_flexible: int  # versions from here on use compact forms and tagged fields
    request: tuple
    response: tuple

    def flexible(self, version: int) -> bool:
        return version >= self.first_flexible


_S, _I8, _I16, _I32, _I64, _B = "string", "int8", "int16", "int32", "int64", "bool"

# DescribeCluster v1's endpoint types (KIP-919): 1 the brokers, 2 the KRaft controllers.
ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS = 1, 2

PRODUCE = Api(0, "Produce", 3, 8, 9, request=(
    f("transactional_id", _S, nullable="0+"),
    f("acks", _I16),
    f("timeout_ms", _I32),
    f("topic_data", Array((
        f("name", _S),
        f("partition_data", Array((
            f("index", _I32),
            f("records", "records", nullable="0+"),
        ))),
    ))),
), response=(
    f("responses", Array((
        f("name", _S),
        f("partition_responses", Array((
            f("index", _I32),
            f("error_code", _I16),
            f("base_offset", _I64),
            f("log_append_time_ms", _I64, "2+", default=-1),
            f("log_start_offset", _I64, "5+", default=-1),
            f("record_errors", Array((f("batch_index", _I32), f("batch_index_error_message", _S, nullable="0+"))),
              "8+"),
            f("error_message", _S, "8+", nullable="0+"),
        ))),
    ))),
    f("throttle_time_ms", _I32, "1+"),
))

FETCH = Api(1, "Fetch", 4, 11, 12, request=(
    f("replica_id", _I32),
    f("max_wait_ms", _I32),
    f("min_bytes", _I32),
    f("max_bytes", _I32, "3+", default=0x7FFFFFFF),
    f("isolation_level", _I8, "4+"),
    f("session_id", _I32, "7+"),
    f("session_epoch", _I32, "7+", default=-1),
    f("topics", Array((
        f("topic", _S),
        f("partitions", Array((
            f("partition", _I32),
            f("current_leader_epoch", _I32, "9+", default=-1),
            f("fetch_offset", _I64),
            f("log_start_offset", _I64, "5+", default=-1),
            f("partition_max_bytes", _I32),
        ))),
    ))),
    f("forgotten_topics_data", Array((f("topic", _S), f("partitions", Array(_I32)))), "7+"),
    f("rack_id", _S, "11+"),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("error_code", _I16, "7+"),
    f("session_id", _I32, "7+"),
    f("responses", Array((
        f("topic", _S),
        f("partitions", Array((
            f("partition_index", _I32),
            f("error_code", _I16),
            f("high_watermark", _I64),
            f("last_stable_offset", _I64, "4+", default=-1),
            f("log_start_offset", _I64, "5+", default=-1),
            f("aborted_transactions", Array((f("producer_id", _I64), f("first_offset", _I64))), "4+",
              nullable="4+"),
            f("preferred_read_replica", _I32, "11+", default=-1),
            f("records", "records", nullable="0+"),
        ))),
    ))),
))

LIST_OFFSETS = Api(2, "ListOffsets", 0, 5, 6, request=(
    f("replica_id", _I32),
    f("isolation_level", _I8, "2+"),
    f("topics", Array((
        f("name", _S),
        f("partitions", Array((
            f("partition_index", _I32),
            f("current_leader_epoch", _I32, "4+", default=-1),
            f("timestamp", _I64),
            f("max_num_offsets", _I32, "0", default=1),
        ))),
    ))),
), response=(
    f("throttle_time_ms", _I32, "2+"),
    f("topics", Array((
        f("name", _S),
        f("partitions", Array((
            f("partition_index", _I32),
            f("error_code", _I16),
            f("old_style_offsets", Array(_I64), "0"),
            f("timestamp", _I64, "1+", default=-1),
            f("offset", _I64, "1+", default=-1),
            f("leader_epoch", _I32, "4+", default=-1),
        ))),
    ))),
))

_BROKER = (f("node_id", _I32), f("host", _S), f("port", _I32), f("rack", _S, "1+", nullable="0+"))

METADATA = Api(3, "Metadata", 0, 8, 9, request=(
    f("topics", Array((f("name", _S),)), nullable="1+"),
    f("allow_auto_topic_creation", _B, "4+", default=True),
    f("include_cluster_authorized_operations", _B, "8-10"),
    f("include_topic_authorized_operations", _B, "8+"),
), response=(
    f("throttle_time_ms", _I32, "3+"),
    f("brokers", Array(_BROKER)),
    f("cluster_id", _S, "2+", nullable="2+"),
    f("controller_id", _I32, "1+", default=-1),
    f("topics", Array((
        f("error_code", _I16),
        f("name", _S),
        f("is_internal", _B, "1+"),
        f("partitions", Array((
            f("error_code", _I16),
            f("partition_index", _I32),
            f("leader_id", _I32),
            f("leader_epoch", _I32, "7+", default=-1),
            f("replica_nodes", Array(_I32)),
            f("isr_nodes", Array(_I32)),
            f("offline_replicas", Array(_I32), "5+"),
        ))),
        f("topic_authorized_operations", _I32, "8+", default=-2147483648),
    ))),
    f("cluster_authorized_operations", _I32, "8-10", default=-2147483648),
))

OFFSET_COMMIT = Api(8, "OffsetCommit", 0, 7, 8, request=(
    f("group_id", _S),
    f("generation_id", _I32, "1+", default=-1),
    f("member_id", _S, "1+"),
    f("group_instance_id", _S, "7+", nullable="7+"),
    f("retention_time_ms", _I64, "2-4", default=-1),
    f("topics", Array((
        f("name", _S),
        f("partitions", Array((
            f("partition_index", _I32),
            f("committed_offset", _I64),
            f("committed_leader_epoch", _I32, "6+", default=-1),
            f("commit_timestamp", _I64, "1", default=-1),
            f("committed_metadata", _S, nullable="0+"),
        ))),
    ))),
), response=(
    f("throttle_time_ms", _I32, "3+"),
    f("topics", Array((
        f("name", _S),
        f("partitions", Array((f("partition_index", _I32), f("error_code", _I16)))),
    ))),
))

OFFSET_FETCH = Api(9, "OffsetFetch", 1, 5, 6, request=(
    f("group_id", _S),
    f("topics", Array((f("name", _S), f("partition_indexes", Array(_I32)))), nullable="2+"),
), response=(
    f("throttle_time_ms", _I32, "3+"),
    f("topics", Array((
        f("name", _S),
        f("partitions", Array((
            f("partition_index", _I32),
            f("committed_offset", _I64),
            f("committed_leader_epoch", _I32, "5+", default=-1),
            f("metadata", _S, nullable="0+"),
            f("error_code", _I16),
        ))),
    ))),
    f("error_code", _I16, "2+"),
))

FIND_COORDINATOR = Api(10, "FindCoordinator", 0, 2, 3, request=(
    f("key", _S),
    f("key_type", _I8, "1+"),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("error_code", _I16),
    f("error_message", _S, "1+", nullable="1+"),
    f("node_id", _I32),
    f("host", _S),
    f("port", _I32),
))

JOIN_GROUP = Api(11, "JoinGroup", 0, 5, 6, request=(
    f("group_id", _S),
    f("session_timeout_ms", _I32),
    f("rebalance_timeout_ms", _I32, "1+", default=-1),
    f("member_id", _S),
    f("group_instance_id", _S, "5+", nullable="5+"),
    f("protocol_type", _S),
    f("protocols", Array((f("name", _S), f("metadata", "bytes")))),
), response=(
    f("throttle_time_ms", _I32, "2+"),
    f("error_code", _I16),
    f("generation_id", _I32, default=-1),
    f("protocol_name", _S),
    f("leader", _S),
    f("member_id", _S),
    f("members", Array((
        f("member_id", _S),
        f("group_instance_id", _S, "5+", nullable="5+"),
        f("metadata", "bytes"),
    ))),
))

HEARTBEAT = Api(12, "Heartbeat", 0, 3, 4, request=(
    f("group_id", _S),
    f("generation_id", _I32),
    f("member_id", _S),
    f("group_instance_id", _S, "3+", nullable="3+"),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("error_code", _I16),
))

LEAVE_GROUP = Api(13, "LeaveGroup", 0, 2, 4, request=(
    f("group_id", _S),
    f("member_id", _S, "0-2"),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("error_code", _I16),
))

SYNC_GROUP = Api(14, "SyncGroup", 0, 3, 4, request=(
    f("group_id", _S),
    f("generation_id", _I32),
    f("member_id", _S),
    f("group_instance_id", _S, "3+", nullable="3+"),
    f("assignments", Array((f("member_id", _S), f("assignment", "bytes")))),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("error_code", _I16),
    f("assignment", "bytes"),
))

DESCRIBE_GROUPS = Api(15, "DescribeGroups", 0, 4, 5, request=(
    f("groups", Array(_S)),
    f("include_authorized_operations", _B, "3+"),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("groups", Array((
        f("error_code", _I16),
        f("group_id", _S),
        f("group_state", _S),
        f("protocol_type", _S),
        f("protocol_data", _S),
        f("members", Array((
            f("member_id", _S),
            f("group_instance_id", _S, "4+", nullable="4+"),
            f("client_id", _S),
            f("client_host", _S),
            f("member_metadata", "bytes"),
            f("member_assignment", "bytes"),
        ))),
        f("authorized_operations", _I32, "3+", default=-2147483648),
    ))),
))

LIST_GROUPS = Api(16, "ListGroups", 0, 2, 3, request=(), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("error_code", _I16),
    f("groups", Array((f("group_id", _S), f("protocol_type", _S)))),
))

API_VERSIONS = Api(18, "ApiVersions", 0, 3, 3, request=(
    f("client_software_name", _S, "3+"),
    f("client_software_version", _S, "3+"),
), response=(
    f("error_code", _I16),
    f("api_keys", Array((f("api_key", _I16), f("min_version", _I16), f("max_version", _I16)))),
    f("throttle_time_ms", _I32, "1+"),
))

CREATE_TOPICS = Api(19, "CreateTopics", 0, 4, 5, request=(
    f("topics", Array((
        f("name", _S),
        f("num_partitions", _I32),
        f("replication_factor", _I16),
        f("assignments", Array((f("partition_index", _I32), f("broker_ids", Array(_I32))))),
        f("configs", Array((f("name", _S), f("value", _S, nullable="0+")))),
    ))),
    f("timeout_ms", _I32),
    f("validate_only", _B, "1+"),
), response=(
    f("throttle_time_ms", _I32, "2+"),
    f("topics", Array((
        f("name", _S),
        f("error_code", _I16),
        f("error_message", _S, "1+", nullable="0+"),
    ))),
))

DELETE_TOPICS = Api(20, "DeleteTopics", 0, 3, 4, request=(
    f("topic_names", Array(_S)),
    f("timeout_ms", _I32),
), response=(
    f("throttle_time_ms", _I32, "1+"),
    f("responses", Array((f("name", _S), f("error_code", _I16)))),
))

INIT_PRODUCER_ID = Api(22, "InitProducerId", 0, 1, 2, request=(
    f("transactional_id", _S, nullable="0+"),
    f("transaction_timeout_ms", _I32),
), response=(
    f("throttle_time_ms", _I32),
    f("error_code", _I16),
    f("producer_id", _I64, default=-1),
    f("producer_epoch", _I16, default=-1),
))

OFFSET_FOR_LEADER_EPOCH = Api(23, "OffsetForLeaderEpoch", 0, 3, 4, request=(
    f("replica_id", _I32, "3+", default=-2),
    f("topics", Array((
        f("topic", _S),
        f("partitions", Array((
            f("partition", _I32),
            f("current_leader_epoch", _I32, "2+", default=-1),
            f("leader_epoch", _I32),
        ))),
    ))),
), response=(
    f("throttle_time_ms", _I32, "2+"),
    f("topics", Array((
        f("topic", _S),
        f("partitions", Array((
            f("error_code", _I16),
            f("partition", _I32),
            f("leader_epoch", _I32, "1+", default=-1),
            f("end_offset", _I64, default=-1),
        ))),
    ))),
))

DESCRIBE_CONFIGS = Api(32, "DescribeConfigs", 0, 3, 4, request=(
    f("resources", Array((
        f("resource_type", _I8),
        f("resource_name", _S),
        f("configuration_keys", Array(_S), nullable="0+"),
    ))),
    f("include_synonyms", _B, "1+"),
    f("include_documentation", _B, "3+"),
), response=(
    f("throttle_time_ms", _I32),
    f("results", Array((
        f("error_code", _I16),
        f("error_message", _S, nullable="0+"),
        f("resource_type", _I8),
        f("resource_name", _S),
        f("configs", Array((
            f("name", _S),
            f("value", _S, nullable="0+"),
            f("read_only", _B),
            f("is_default", _B, "0"),
            f("config_source", _I8, "1+", default=-1),
            f("is_sensitive", _B),
            f("synonyms", Array((f("name", _S), f("value", _S, nullable="0+"), f("source", _I8))), "1+"),
            f("config_type", _I8, "3+"),
            f("documentation", _S, "3+", nullable="0+"),
        ))),
    ))),
))

DESCRIBE_CLUSTER = Api(60, "DescribeCluster", 0, 1, 0, request=(
    f("include_cluster_authorized_operations", _B),
    f("endpoint_type", _I8, "1+", default=ENDPOINT_BROKERS),
), response=(
    f("throttle_time_ms", _I32),
    f("error_code", _I16),
    f("error_message", _S, nullable="0+"),
    f("endpoint_type", _I8, "1+", default=ENDPOINT_BROKERS),
    f("cluster_id", _S),
    f("controller_id", _I32, default=-1),
    f("brokers", Array((f("broker_id", _I32), f("host", _S), f("port", _I32), f("rack", _S, nullable="0+")))),
    f("cluster_authorized_operations", _I32, default=-2147483648),
))

ALL: tuple[Api, ...] = (PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR,
                        JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, API_VERSIONS,
                        CREATE_TOPICS, DELETE_TOPICS,
                        INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER)
BY_KEY: dict[int, Api] = {api.key: api for api in ALL}
