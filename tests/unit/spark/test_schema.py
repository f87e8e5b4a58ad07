"""Export checks that run before Spark: each bad input is one line naming the problem."""

from __future__ import annotations

import json

import pytest

from replog.spark import inputs, schema, synthetic
from replog.spark.schema import ExportError


def good_manifest(**changes):
    manifest = {"schema_version": schema.SCHEMA_VERSION, "format": "parquet", "exported_at_ms": 1,
                "tables": {t: {"file": f"{t}.parquet", "rows": 1} for t in schema.TABLE_NAMES}}
    manifest.update(changes)
    return manifest


def one_line(exc) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_the_spark_schema_is_the_writers_schema():
    from replog.common import export_schema

    kinds = {"int32": "int", "int64": "bigint", "bool": "boolean", "string": "string", "list<int32>": "array<int>"}
    assert {t: {c.name: kinds[c.type] for c in cols} for t, cols in export_schema.TABLES.items()} == schema.TABLES
    assert export_schema.SCHEMA_VERSION == schema.SCHEMA_VERSION


def test_manifest_checks():
    assert schema.check_manifest(good_manifest(), "m")["partitions"] == "partitions.parquet"
    with pytest.raises(ExportError) as exc:
        schema.check_manifest(good_manifest(schema_version=schema.SCHEMA_VERSION + 1), "m")
    assert f"schema version {schema.SCHEMA_VERSION + 1} is not supported" in one_line(exc)
    with pytest.raises(ExportError) as exc:
        schema.check_manifest(good_manifest(format="csv"), "m")
    assert "unknown format 'csv'" in one_line(exc)
    empty = good_manifest()
    empty["tables"]["partitions"]["rows"] = 0
    with pytest.raises(ExportError) as exc:
        schema.check_manifest(empty, "m")
    assert "the export is empty (the partitions table has no rows)" in one_line(exc)


def test_column_checks_name_the_column():
    columns = dict(schema.TABLES["partitions"])
    del columns["isr"], columns["leader"]
    with pytest.raises(ExportError) as exc:
        schema.check_columns("partitions", columns, "p")
    assert one_line(exc) == "p: the partitions table lacks columns leader, isr"
    columns = {**schema.TABLES["brokers"], "alive": "string"}
    with pytest.raises(ExportError) as exc:
        schema.check_columns("brokers", columns, "b")
    assert one_line(exc) == "b: column brokers.alive is string, expected boolean"
    # int64 ids (another writer) are accepted and cast.
    schema.check_columns("brokers", {**schema.TABLES["brokers"], "broker_id": "bigint"}, "b")


def write(tmp_path, fmt="parquet", **kwargs):
    return synthetic.write_export(tmp_path / "export", {"broker_id": [1, 2]},
                                  {"topic": ["t"], "partition": [0], "replicas": [[1, 2]]}, fmt=fmt, **kwargs)


@pytest.mark.parametrize("fmt", ["parquet", "ndjson"])
def test_a_good_export_passes(tmp_path, fmt):
    fmt_seen, paths = inputs.export_files(str(write(tmp_path, fmt)))
    assert fmt_seen == fmt and set(paths) == set(schema.TABLE_NAMES)


def test_missing_directory_and_manifest(tmp_path):
    with pytest.raises(ExportError, match="no such export directory"):
        inputs.export_files(str(tmp_path / "nope"))
    (tmp_path / "half").mkdir()
    with pytest.raises(ExportError) as exc:
        inputs.export_files(str(tmp_path / "half"))
    assert "no _manifest.json" in one_line(exc)


def test_wrong_schema_version_in_parquet_metadata(tmp_path):
    newer = schema.SCHEMA_VERSION + 1
    path = write(tmp_path, schema_version=newer)
    manifest = json.loads((path / "_manifest.json").read_text())
    manifest["schema_version"] = schema.SCHEMA_VERSION  # a manifest that lies: the file's metadata says newer
    (path / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ExportError) as exc:
        inputs.export_files(str(path))
    assert f"schema version {newer} is not supported" in one_line(exc)


def test_missing_column_in_parquet(tmp_path):
    import pyarrow.parquet as pq

    path = write(tmp_path)
    table = pq.read_table(path / "partitions.parquet").drop_columns(["replicas"])
    pq.write_table(table, path / "partitions.parquet")
    with pytest.raises(ExportError) as exc:
        inputs.export_files(str(path))
    assert one_line(exc).endswith("partitions.parquet: the partitions table lacks column replicas")


def test_missing_column_in_ndjson(tmp_path):
    path = write(tmp_path, "ndjson")
    lines = [json.loads(line) for line in (path / "brokers.ndjson").read_text().splitlines()]
    (path / "brokers.ndjson").write_text("".join(json.dumps({k: v for k, v in row.items() if k != "rack"}) + "\n"
                                                 for row in lines))
    with pytest.raises(ExportError) as exc:
        inputs.export_files(str(path))
    assert one_line(exc).endswith("brokers.ndjson: the brokers table lacks column rack")


def test_empty_export(tmp_path):
    path = synthetic.write_export(tmp_path / "export", {"broker_id": [1]},
                                  {"topic": [], "partition": [], "replicas": []})
    with pytest.raises(ExportError) as exc:
        inputs.export_files(str(path))
    assert "the export is empty (the partitions table has no rows)" in one_line(exc)


def test_missing_table_file(tmp_path):
    path = write(tmp_path)
    (path / "brokers.parquet").unlink()
    with pytest.raises(ExportError) as exc:
        inputs.export_files(str(path))
    assert "the brokers table's file brokers.parquet is missing" in one_line(exc)
