"""The topology export as files: the ExportTopology stream -> Parquet or NDJSON tables.

Theory of operation
-------------------
The gateway streams rows and keeps nothing; this module collects the rows into
columns and writes one file per table into a directory:

    DIR/cluster.<ext>      one row
    DIR/brokers.<ext>      one row per broker (live, or named in an assignment)
    DIR/partitions.<ext>   one row per partition
    DIR/groups.<ext>       one row per consumer group (empty unless asked for with --groups)
    DIR/group_offsets.<ext> one row per group and committed partition, with lag (likewise)
    DIR/_manifest.json     schema_version, format, row counts; written last

``<ext>`` is ``parquet`` or ``ndjson``. Each file is written under a temporary
name and renamed, and the manifest comes last, so a reader that finds the
manifest finds complete tables (Spark and Hadoop skip names starting with '_').
Parquet files also carry ``replog.schema_version`` in their key-value metadata.

The tables, their columns and the schema version are ``replog.common.export_schema``'s
(docs/export-schema.md describes them column by column).
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Iterable

from replog.cli.output import CliError
from replog.common.export_schema import FORMATS, MANIFEST, SCHEMA_VERSION, TABLES, arrow_schema


class TopologyTables:
    """The export's tables as columns (lists), filled from the stream."""

    def __init__(self) -> None:
        self.columns = {table: {c.name: [] for c in columns} for table, columns in TABLES.items()}

    def rows(self, table: str) -> int:
        first = TABLES[table][0].name
        return len(self.columns[table][first])

    @property
    def schema_version(self) -> int:
        return self.columns["cluster"]["schema_version"][0]

    def add(self, response) -> None:
        kind = response.WhichOneof("row")
        if kind == "partition_batch":
            for row in response.partition_batch.rows:
                self._partition(row)
        elif kind == "partition":
            self._partition(response.partition)
        elif kind == "broker":
            self._broker(response.broker)
        elif kind == "cluster":
            self._cluster(response.cluster)
        elif kind in ("group", "group_offset"):
            self._plain("groups" if kind == "group" else "group_offsets", getattr(response, kind))

    def _plain(self, table: str, row) -> None:
        """A row whose fields are the table's columns, name for name, none of them nullable."""
        for name, values in self.columns[table].items():
            values.append(getattr(row, name))

    def _cluster(self, row) -> None:
        if self.rows("cluster"):
            raise CliError("the export stream carried two cluster rows")
        if row.schema_version != SCHEMA_VERSION:
            raise CliError(f"the gateway exports schema version {row.schema_version}; this replog writes "
                           f"version {SCHEMA_VERSION} (use a replog CLI that matches the gateway)")
        c = self.columns["cluster"]
        c["controller_id"].append(row.controller_id)
        c["controller_epoch"].append(row.controller_epoch)
        c["exported_at_ms"].append(row.exported_at_ms)
        c["schema_version"].append(row.schema_version)

    def _broker(self, row) -> None:
        c = self.columns["brokers"]
        c["broker_id"].append(row.broker_id)
        c["host"].append(row.host or None)     # a broker named in an assignment but not registered has none
        c["port"].append(row.port or None)
        c["rack"].append(row.rack or None)
        c["alive"].append(row.alive)
        c["controller"].append(row.controller)

    def _partition(self, row) -> None:
        c = self.columns["partitions"]
        c["topic"].append(row.topic)
        c["partition"].append(row.partition)
        c["leader"].append(row.leader)
        c["leader_epoch"].append(row.leader_epoch)
        c["replicas"].append(list(row.replicas))
        c["isr"].append(list(row.isr))
        c["preferred_leader"].append(row.preferred_leader)
        c["under_replicated"].append(row.under_replicated)
        c["unavailable"].append(row.unavailable)
        c["under_min_isr"].append(row.under_min_isr)
        c["min_insync_replicas"].append(row.min_insync_replicas)
        c["log_end_offset"].append(row.log_end_offset)
        c["high_watermark"].append(row.high_watermark)
        c["size_bytes"].append(row.size_bytes)
        c["log_start_offset"].append(row.log_start_offset)
        c["elr"].append(list(row.elr))


def collect(responses: Iterable) -> TopologyTables:
    tables = TopologyTables()
    for response in responses:
        if not tables.rows("cluster") and response.WhichOneof("row") != "cluster":
            raise CliError("the export stream did not start with the cluster row")
        tables.add(response)
    if not tables.rows("cluster"):
        raise CliError("the export stream was empty")
    return tables


def write(tables: TopologyTables, out_dir: Path, fmt: str) -> dict:
    """Write the tables and the manifest; returns the manifest."""
    if fmt not in FORMATS:
        raise CliError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        files = {}
        for table in TABLES:
            path = out_dir / f"{table}.{fmt}"
            temporary = out_dir / f".{table}.{fmt}.tmp"
            (_write_parquet if fmt == "parquet" else _write_ndjson)(tables, table, temporary)
            os.replace(temporary, path)
            files[table] = {"file": path.name, "rows": tables.rows(table)}
        manifest = {
            "schema_version": SCHEMA_VERSION, "format": fmt, "tables": files,
            "exported_at_ms": tables.columns["cluster"]["exported_at_ms"][0],
        }
        temporary = out_dir / f".{MANIFEST}.tmp"
        temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, out_dir / MANIFEST)
    except OSError as exc:
        raise CliError(f"cannot write the export to {out_dir}: {exc.strerror or exc}") from None
    return manifest


def require_format(fmt: str) -> None:
    """Refuse at once, before any download, a format whose library is not installed: pyarrow is an extra of
    the client's wheel (`replog-client[parquet]`); NDJSON needs nothing more."""
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise CliError("--format parquet needs pyarrow: pip install 'replog-client[parquet]' (or use --format ndjson)")


def _write_parquet(tables: TopologyTables, table: str, path: Path) -> None:
    require_format("parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(table)
    columns = tables.columns[table]
    arrays = [pa.array(columns[f.name], type=f.type) for f in schema]
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), path)


def _write_ndjson(tables: TopologyTables, table: str, path: Path) -> None:
    names = [c.name for c in TABLES[table]]
    columns = [tables.columns[table][n] for n in names]
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    with open(path, "w") as out:
        for values in zip(*columns):
            out.write(dumps(dict(zip(names, values))))
            out.write("\n")
