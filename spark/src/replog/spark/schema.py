"""The topology export, schema version 3, as the Spark jobs read it.

Theory of operation
-------------------
The export is five tables (cluster, brokers, partitions, groups, group_offsets)
plus ``_manifest.json``; ``replog.common.export_schema`` defines every column
(docs/export-schema.md lists them) and the writer is ``replog.cli.export_files``. This module takes the columns'
Spark types from there (the jobs must not import the CLI: a Spark cluster's workers
install only this distribution and replog-common) and checks what a reader can
check cheaply, before Spark does any work:

* the manifest: present, ``schema_version`` known, every table's file named;
* each table's columns: none missing, none of the wrong type (extra columns are
  allowed, a later version may add some);
* emptiness: an export with no brokers or no partitions is refused — every job
  would answer nothing, and the usual cause is a wrong path or a failed export
  (a cluster without consumer groups has empty groups and group_offsets tables).

Every failure is an ``ExportError`` whose message is one line naming the file,
the table or the column. The functions here are pure (dicts and type strings in,
messages out); ``inputs.py`` does the reading.
"""

from __future__ import annotations

from typing import Mapping

from replog.common import export_schema
from replog.common.export_schema import (  # noqa: F401 (the jobs' names)
    FORMATS,
    MAY_BE_EMPTY,
    SCHEMA_VERSION,
    TABLE_NAMES,
    ddl,
)

# Column name -> Spark SQL type, in the order the export writes them (derived, never restated).
TABLES: dict[str, dict[str, str]] = {
    table: {c.name: export_schema.spark_type(c) for c in columns} for table, columns in export_schema.TABLES.items()
}

# Integer types a reader may widen losslessly (an NDJSON file read with inference,
# or a Parquet file written by another tool with int64 ids).
_INTEGER_TYPES = ("int", "bigint", "smallint", "tinyint")


class ExportError(Exception):
    """A topology export that cannot be used; the message is one line naming the problem."""


def check_manifest(manifest: object, where: str) -> dict[str, str]:
    """The file name of each table, from a parsed ``_manifest.json``; raises ExportError."""
    if not isinstance(manifest, Mapping):
        raise ExportError(f"{where}: the manifest is not a JSON object")
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ExportError(f"{where}: schema version {version!r} is not supported "
                          f"(this replog-spark reads version {SCHEMA_VERSION})")
    fmt = manifest.get("format")
    if fmt not in FORMATS:
        raise ExportError(f"{where}: unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    tables = manifest.get("tables")
    if not isinstance(tables, Mapping):
        raise ExportError(f"{where}: the manifest has no 'tables' object")
    files = {}
    for table in TABLE_NAMES:
        entry = tables.get(table)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("file"), str):
            raise ExportError(f"{where}: the manifest names no file for the {table} table")
        rows = entry.get("rows")
        if table != "cluster" and table not in MAY_BE_EMPTY and rows == 0:
            raise ExportError(f"{where}: the export is empty (the {table} table has no rows)")
        files[table] = entry["file"]
    return files


def check_columns(table: str, actual: Mapping[str, str], where: str) -> None:
    """``actual`` maps column name -> Spark simple type string (``df.schema`` turned into
    ``{f.name: f.dataType.simpleString()}``). Raises ExportError on the first problem."""
    expected = TABLES[table]
    missing = [name for name in expected if name not in actual]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise ExportError(f"{where}: the {table} table lacks column{plural} {', '.join(missing)}")
    for name, kind in expected.items():
        if not _compatible(kind, actual[name]):
            raise ExportError(f"{where}: column {table}.{name} is {actual[name]}, expected {kind}")


def check_not_empty(table: str, rows: int, where: str) -> None:
    if rows == 0:
        raise ExportError(f"{where}: the export is empty (the {table} table has no rows)")


def check_version(version: object, where: str) -> None:
    """The cluster row's (or a Parquet file's metadata) schema version."""
    if str(version) != str(SCHEMA_VERSION):
        raise ExportError(f"{where}: schema version {version} is not supported "
                          f"(this replog-spark reads version {SCHEMA_VERSION})")


def _compatible(expected: str, actual: str) -> bool:
    if expected == actual:
        return True
    if expected in _INTEGER_TYPES:
        return actual in _INTEGER_TYPES
    if expected.startswith("array<") and actual.startswith("array<"):
        return _compatible(expected[6:-1], actual[6:-1])
    return False
