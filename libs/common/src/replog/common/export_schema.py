"""The topology export's schema: the one definition of its tables, columns, types and version.

The gateway streams the tables (`ExportTopology`; the rows are `ClusterRow`,
`BrokerRow`, `PartitionRow`, `GroupRow` and `GroupOffsetRow` in protos/replog/v1/admin.proto), `replog export`
writes them as Parquet or NDJSON files, and the Spark jobs read them. Each of
those takes the columns from here: the Arrow schema (`arrow_schema`), the Spark
DDL (`spark_type`, `ddl`) and docs/export-schema.md (written by `make docs`) are
derived, never restated. Bump `SCHEMA_VERSION` on any change a reader could
notice: a column added, removed, renamed, retyped or given a new meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 3  # 2: partitions.log_start_offset; 3: partitions.elr, the groups and group_offsets tables
FORMATS = ("parquet", "ndjson")
MANIFEST = "_manifest.json"


@dataclass(frozen=True)
class Column:
    name: str
    type: str            # int32 | int64 | bool | string | list<int32>
    meaning: str
    nullable: bool = False


TABLES: dict[str, tuple[Column, ...]] = {
    "cluster": (
        Column("controller_id", "int32", "id of the active controller, -1 when none holds the seat"),
        Column("controller_epoch", "int32",
               "controller epoch (`/controller_epoch`), 0 before any controller was elected"),
        Column("exported_at_ms", "int64", "when the gateway read the snapshot, milliseconds since the Unix epoch"),
        Column("schema_version", "int32", f"version of these tables ({SCHEMA_VERSION})"),
    ),
    "brokers": (
        Column("broker_id", "int32", "broker id"),
        Column("host", "string", "registered host; null for a broker named in an assignment but not registered",
               nullable=True),
        Column("port", "int32", "registered gRPC port; null when not registered", nullable=True),
        Column("rack", "string", "rack label; null when the broker has none or is not registered", nullable=True),
        Column("alive", "bool", "registered in `/brokers/ids` (its ZooKeeper session is alive)"),
        Column("controller", "bool", "its id equals the controller id"),
    ),
    "partitions": (
        Column("topic", "string", "topic name"),
        Column("partition", "int32", "partition index"),
        Column("leader", "int32",
               "leader broker id, -1 when offline or when the controller has not created the state yet"),
        Column("leader_epoch", "int32", "leader epoch, -1 when there is no state yet"),
        Column("replicas", "list<int32>",
               "assigned replicas in preference order (during a reassignment: target plus original)"),
        Column("isr", "list<int32>", "in-sync replicas, empty when there is no state yet"),
        Column("preferred_leader", "int32", "first assigned replica"),
        Column("under_replicated", "bool",
               "ISR smaller than the replication factor (kafka-topics `--under-replicated-partitions`)"),
        Column("unavailable", "bool", "leader -1 or not alive (kafka-topics `--unavailable-partitions`)"),
        Column("under_min_isr", "bool",
               "no leader, or ISR smaller than min.insync.replicas (kafka-topics `--under-min-isr-partitions`)"),
        Column("min_insync_replicas", "int32",
               "the topic's min.insync.replicas in force; at-min-ISR is `size(isr) = min_insync_replicas`"),
        Column("log_end_offset", "int64", "the leader's log end offset; -1 when unknown or not asked (`--log-stats`)"),
        Column("high_watermark", "int64", "the leader's high watermark; -1 when unknown or not asked"),
        Column("size_bytes", "int64", "the leader's log size on disk; -1 when unknown or not asked"),
        Column("log_start_offset", "int64", "the leader's log start offset (retention and DeleteRecords move it "
               "up); -1 when unknown or not asked"),
        Column("elr", "list<int32>", "eligible leader replicas (KIP-966): outside the ISR, holding every committed "
               "record when the ISR fell below min.insync.replicas; empty when there are none"),
    ),
    # The consumer groups, as their coordinators describe them; empty unless asked (`--groups`).
    "groups": (
        Column("group", "string", "group id"),
        Column("state", "string", "Empty, PreparingRebalance, CompletingRebalance, Stable or Dead"),
        Column("generation", "int32", "the current generation (fences stale members' commits)"),
        Column("members", "int32", "members in the group now"),
        Column("coordinator", "int32", "broker id of its coordinator (the leader of its __consumer_offsets partition)"),
    ),
    "group_offsets": (
        Column("group", "string", "group id"),
        Column("topic", "string", "topic name"),
        Column("partition", "int32", "partition index"),
        Column("committed_offset", "int64", "the group's committed offset: the next offset it reads"),
        Column("log_end_offset", "int64", "the partition leader's high watermark; -1 when unknown"),
        Column("lag", "int64", "`log_end_offset - committed_offset`, at least 0; -1 when the log end is unknown "
                               "(as `replog groups describe` shows it)"),
    ),
}
# Tables that may have no rows: a cluster without groups, or an export that did not ask for them.
MAY_BE_EMPTY = frozenset({"groups", "group_offsets"})
TABLE_NAMES = tuple(TABLES)

_SPARK_TYPES = {"int32": "int", "int64": "bigint", "bool": "boolean", "string": "string", "list<int32>": "array<int>"}


def column_names(table: str) -> tuple[str, ...]:
    return tuple(c.name for c in TABLES[table])


def spark_type(column: Column) -> str:
    """The column's Spark SQL type: int32 -> int, list<int32> -> array<int>, ..."""
    return _SPARK_TYPES[column.type]


def ddl(table: str) -> str:
    """The table's schema as a Spark DDL string: '`topic` string, `partition` int, ...'."""
    return ", ".join(f"`{c.name}` {spark_type(c)}" for c in TABLES[table])


def arrow_schema(table: str, version: int = SCHEMA_VERSION):
    """The table's Arrow schema, carrying `replog.schema_version` and `replog.table` as metadata.

    pyarrow is imported here, not at module load: the services use this module without it."""
    import pyarrow as pa

    types = {"int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_(), "string": pa.string(),
             "list<int32>": pa.list_(pa.int32())}
    fields = [pa.field(c.name, types[c.type], nullable=c.nullable) for c in TABLES[table]]
    return pa.schema(fields, metadata={"replog.schema_version": str(version), "replog.table": table})
