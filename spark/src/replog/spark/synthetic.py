"""Synthetic topology exports, written exactly as ``replog export`` writes them (schema version 3).

For the tests (clusters with known answers) and the benchmark (a million
partitions). ``write_export`` takes the tables' columns and writes the
files, the Parquet key-value metadata and the manifest the way
``replog.cli.export_files`` does; ``round_robin`` builds a rack-alternating
Kafka-style assignment whose balance and rack diversity are known by design.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

from replog.common.export_schema import arrow_schema
from replog.spark import schema


def write_export(out_dir: Path | str, brokers: Mapping[str, Sequence], partitions: Mapping[str, Sequence], *,
                 fmt: str = "parquet", controller_id: int = 1, controller_epoch: int = 1,
                 exported_at_ms: int = 1_700_000_000_000, schema_version: int = schema.SCHEMA_VERSION,
                 groups: Mapping[str, Sequence] | None = None,
                 group_offsets: Mapping[str, Sequence] | None = None) -> Path:
    """Write an export directory; ``brokers`` / ``partitions`` map column name -> values, and so do
    ``groups`` / ``group_offsets`` (every column; no rows when left out).

    Partition columns left out get the export's defaults for a healthy cluster:
    leader = preferred_leader = first replica, isr = replicas, flags false, min ISR 1,
    offsets and size -1 (unknown), no ELR."""
    import pyarrow as pa

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    replicas = partitions["replicas"]
    count = len(replicas)
    defaults = {
        "leader": lambda: [r[0] if len(r) else -1 for r in replicas],
        "leader_epoch": lambda: [0] * count,
        "isr": lambda: replicas,
        "preferred_leader": lambda: [r[0] if len(r) else -1 for r in replicas],
        "under_replicated": lambda: [False] * count,
        "unavailable": lambda: [False] * count,
        "under_min_isr": lambda: [False] * count,
        "min_insync_replicas": lambda: [1] * count,
        "log_end_offset": lambda: [-1] * count,
        "high_watermark": lambda: [-1] * count,
        "size_bytes": lambda: [-1] * count,
        "log_start_offset": lambda: [-1] * count,
        "elr": lambda: [[] for _ in range(count)],
    }
    partition_columns = {name: partitions[name] if name in partitions else defaults[name]()
                         for name in schema.TABLES["partitions"]}
    broker_count = len(brokers["broker_id"])
    broker_defaults = {"host": ["127.0.0.1"] * broker_count, "port": [9000] * broker_count,
                       "rack": [None] * broker_count, "alive": [True] * broker_count,
                       "controller": [b == controller_id for b in brokers["broker_id"]]}
    broker_columns = {name: brokers[name] if name in brokers else broker_defaults[name]
                      for name in schema.TABLES["brokers"]}
    cluster_columns = {"controller_id": [controller_id], "controller_epoch": [controller_epoch],
                       "exported_at_ms": [exported_at_ms], "schema_version": [schema_version]}
    tables = {}
    group_columns = {table: given or {name: [] for name in schema.TABLES[table]}
                     for table, given in (("groups", groups), ("group_offsets", group_offsets))}
    for table, columns in (("cluster", cluster_columns), ("brokers", broker_columns),
                           ("partitions", partition_columns), *group_columns.items()):
        arrow = arrow_schema(table, schema_version)
        arrays = [columns[f.name] if isinstance(columns[f.name], pa.Array) else pa.array(columns[f.name], type=f.type)
                  for f in arrow]
        tables[table] = pa.Table.from_arrays(arrays, schema=arrow)
    files = {}
    for table, data in tables.items():
        path = out / f"{table}.{fmt}"
        temporary = out / f".{table}.{fmt}.tmp"
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(data, temporary)
        else:
            _write_ndjson(data, temporary)
        os.replace(temporary, path)
        files[table] = {"file": path.name, "rows": data.num_rows}
    manifest = {"schema_version": schema_version, "format": fmt, "tables": files, "exported_at_ms": exported_at_ms}
    (out / "_manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out


def _write_ndjson(table, path: Path) -> None:
    names = table.column_names
    encode = json.JSONEncoder(separators=(",", ":")).encode
    with open(path, "w") as out:
        for row in zip(*(table.column(n).to_pylist() for n in names)):
            out.write(encode(dict(zip(names, row))))
            out.write("\n")


def rack_alternating(broker_racks: Mapping[int, str | None]) -> list[int]:
    """Kafka's rack-alternating broker order: a1, b1, c1, a2, b2, c2, ..."""
    by_rack: dict[str | None, list[int]] = {}
    for broker in sorted(broker_racks):
        by_rack.setdefault(broker_racks[broker], []).append(broker)
    order = []
    queues = [by_rack[r] for r in sorted(by_rack, key=lambda r: (r is None, r or ""))]
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return order


def round_robin(broker_racks: Mapping[int, str | None], topics: int, partitions_per_topic: int,
                replication_factor: int) -> dict[str, list]:
    """Partition columns (topic, partition, replicas): consecutive runs of the rack-alternating
    order, shifted per topic, so every broker holds the same number of replicas and leads the
    same number of partitions when the counts divide, and replicas span min(RF, racks) racks
    when racks have equal sizes."""
    order = rack_alternating(broker_racks)
    n = len(order)
    topic, partition, replicas = [], [], []
    for t in range(topics):
        for p in range(partitions_per_topic):
            start = (t * partitions_per_topic + p) % n
            topic.append(f"topic-{t:04d}")
            partition.append(p)
            replicas.append([order[(start + k) % n] for k in range(replication_factor)])
    return {"topic": topic, "partition": partition, "replicas": replicas}
