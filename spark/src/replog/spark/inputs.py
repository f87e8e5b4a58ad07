"""Reading the jobs' inputs: a topology export directory or a live gateway, and how to call the cluster.

The only module (with traces.py) that reads files for the jobs; the jobs'
``main()`` calls it and hands the frames to pure ``DataFrame -> DataFrame``
functions. What can be checked without Spark (the manifest, a Parquet file's
key-value metadata, an NDJSON file's first row) is checked before Spark reads
anything, so a bad directory fails in milliseconds with one line.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from replog.spark import schema
from replog.spark.schema import ExportError


@dataclass(frozen=True)
class Topology:
    cluster: object      # DataFrame, one row
    brokers: object      # DataFrame, one row per broker
    partitions: object   # DataFrame, one row per partition
    origin: str          # the directory or gateway it came from
    groups: object = None         # DataFrame, one row per consumer group (empty unless exported with them)
    group_offsets: object = None  # DataFrame, one row per group and committed partition, with lag


def export_files(export_dir: str) -> tuple[str, dict[str, Path]]:
    """Check an export directory without Spark; returns its format and each table's path."""
    root = Path(export_dir)
    if not root.is_dir():
        raise ExportError(f"{export_dir}: no such export directory")
    manifest_path = root / "_manifest.json"
    if not manifest_path.is_file():
        raise ExportError(f"{export_dir}: no _manifest.json (not a topology export, or one still being written)")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportError(f"{manifest_path}: unreadable manifest ({exc})") from None
    files = schema.check_manifest(manifest, str(manifest_path))
    paths = {}
    for table, name in files.items():
        path = root / name
        if not path.exists():
            raise ExportError(f"{export_dir}: the {table} table's file {name} is missing")
        paths[table] = path
    fmt = manifest["format"]
    for table, path in paths.items():
        if fmt == "parquet" and path.is_file():
            _check_parquet_metadata(table, path)
        elif fmt == "ndjson" and path.is_file():
            _check_ndjson_first_row(table, path)
    return fmt, paths


def _check_parquet_metadata(table: str, path: Path) -> None:
    import pyarrow.parquet as pq

    try:
        arrow_schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise ExportError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None
    metadata = arrow_schema.metadata or {}
    version = metadata.get(b"replog.schema_version")
    if version is not None:
        schema.check_version(version.decode(), str(path))
    schema.check_columns(table, {f.name: _arrow_type(f.type) for f in arrow_schema}, str(path))


def parquet_ddl(path: Path) -> str:
    """A Parquet file's own schema as Spark DDL (types as written; conform() casts them)."""
    import pyarrow.parquet as pq

    return ", ".join(f"`{f.name}` {_arrow_type(f.type)}" for f in pq.read_schema(path))


def _arrow_type(arrow_type) -> str:
    import pyarrow as pa

    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"array<{_arrow_type(arrow_type.value_type)}>"
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.bool_(): "boolean", pa.string(): "string", pa.large_string(): "string"}
    return names.get(arrow_type, str(arrow_type))


def _check_ndjson_first_row(table: str, path: Path) -> None:
    """NDJSON read with an explicit schema would turn a missing key into nulls; look first."""
    with open(path, encoding="utf-8") as lines:
        first = next((line for line in lines if line.strip()), None)
    if first is None:
        if table in schema.MAY_BE_EMPTY:
            return
        if table != "cluster":
            raise ExportError(f"{path}: the export is empty (the {table} table has no rows)")
        raise ExportError(f"{path}: the cluster table has no row")
    try:
        row = json.loads(first)
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: the first line is not JSON ({exc})") from None
    missing = [name for name in schema.TABLES[table] if name not in row]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise ExportError(f"{path}: the {table} table lacks column{plural} {', '.join(missing)}")
    if table == "cluster":
        schema.check_version(row.get("schema_version"), str(path))


def export_broker_racks(fmt: str, path: Path) -> dict[int, str | None] | None:
    """The brokers table's rack of each broker id (None for none), read without Spark; None when the table is
    not one readable file (a directory of parts): Spark reads it then, and the same checks run there."""
    if not path.is_file():
        return None
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            columns = pq.read_table(path, columns=["broker_id", "rack"]).to_pydict()
            pairs = list(zip(columns["broker_id"], columns["rack"]))
        else:
            with open(path, encoding="utf-8") as lines:
                rows = [json.loads(line) for line in lines if line.strip()]
            pairs = [(row.get("broker_id"), row.get("rack")) for row in rows]
    except Exception:  # pyarrow raises several types; a bad file is reported where Spark reads it
        return None
    return {int(broker): (rack or None) for broker, rack in pairs if broker is not None}


def read_export(spark, export_dir: str) -> Topology:
    fmt, paths = export_files(export_dir)
    frames = {}
    for table, path in paths.items():
        if fmt == "parquet" and path.is_file():
            # The footer was read and checked already; giving Spark the schema spares it a job.
            frame = spark.read.schema(parquet_ddl(path)).parquet(str(path))
        elif fmt == "parquet":
            frame = spark.read.parquet(str(path))
        else:
            frame = spark.read.schema(schema.ddl(table)).json(str(path))
        frames[table] = conform(table, frame, str(path))
    return Topology(frames["cluster"], frames["brokers"], frames["partitions"], export_dir,
                    frames["groups"], frames["group_offsets"])


def read_gateway(spark, gateway: str, *, log_stats: bool = False, tls: dict[str, str] | None = None) -> Topology:
    """``tls``: the source's TLS options (tls_options), none to resolve TLS as every client does."""
    def load(table: str):
        return (spark.read.format("replog").option("gateway", gateway).option("table", table)
                .option("log_stats", str(log_stats).lower()).options(**(tls or {})).load())

    frames = {table: load(table) for table in schema.TABLE_NAMES}
    # The stream has its rows only once read: materialise them (at most a few
    # million small rows) so that three jobs' actions do not stream three times.
    frames = {table: frame.cache() for table, frame in frames.items()}
    for table in ("brokers", "partitions"):
        schema.check_not_empty(table, frames[table].limit(1).count(), gateway)
    return Topology(frames["cluster"], frames["brokers"], frames["partitions"], gateway,
                    frames["groups"], frames["group_offsets"])


def load(spark, *, export_dir: str | None = None, gateway: str | None = None,
         tls: dict[str, str] | None = None) -> Topology:
    if (export_dir is None) == (gateway is None):
        raise ExportError("give exactly one of --export DIR and --gateway HOST:PORT")
    return read_export(spark, export_dir) if export_dir else read_gateway(spark, gateway, tls=tls)


# --- TLS flags of the jobs that call the cluster ---------------------------------------------

def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """The replog command line's TLS flags (--tls-ca-file, --tls-cert-file, --tls-key-file, --insecure)."""
    from replog.cli.main import TLS_OPTIONS

    group = parser.add_argument_group("TLS (default: REPLOG_TLS_* in the environment, else the local cluster's "
                                      "operator certificate)")
    for flag, options in TLS_OPTIONS:
        group.add_argument(flag, **options)


def check_tls_arguments(args, *, calls_cluster: bool = True) -> None:
    """Before Spark starts: the three files go together, --insecure takes none of them, and a job reading
    an export directory (``calls_cluster`` false) has no use for any of them."""
    from replog.common.security.local import ClientTlsError, resolve_client_tls
    from replog.spark.main import JobError

    files = (args.tls_ca_file, args.tls_cert_file, args.tls_key_file)
    if not calls_cluster and (any(files) or args.insecure):
        raise JobError("--tls-* and --insecure are for --gateway: an export directory is read without calling "
                       "the cluster")
    if args.insecure and any(files):
        raise JobError("--insecure (plaintext) and --tls-* files contradict each other: give one")
    if any(files):
        try:
            resolve_client_tls(*files)
        except ClientTlsError as exc:
            raise JobError(str(exc)) from None


def tls_options(args) -> dict[str, str]:
    """The replog sources' TLS options for the flags given (none: the sources resolve TLS as every client does,
    from REPLOG_TLS_* or the local cluster's state directory)."""
    given = {"tls_ca_file": args.tls_ca_file, "tls_cert_file": args.tls_cert_file, "tls_key_file": args.tls_key_file}
    options = {name: path for name, path in given.items() if path}
    if args.insecure:
        options["insecure"] = "true"
    return options


def conform(table: str, frame, where: str):
    """The table's columns, in order, with schema.py's types (ids written as int64 become int32)."""
    actual = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    schema.check_columns(table, actual, where)
    from pyspark.sql import functions as F

    return frame.select([F.col(f"`{name}`").cast(kind).alias(name) for name, kind in schema.TABLES[table].items()])
