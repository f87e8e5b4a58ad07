"""The export's documented schema (SCHEMA.md, the gateway's docstring) is the one written."""

from __future__ import annotations

import re
from pathlib import Path

import replog.gateway
from replog.cli import export_files
from replog.gateway import export as gateway_export
from replog.v1 import admin_pb2

SCHEMA_MD = Path(replog.gateway.__file__).with_name("SCHEMA.md")


def documented_tables() -> dict[str, list[tuple[str, str, bool]]]:
    tables: dict[str, list[tuple[str, str, bool]]] = {}
    current = None
    for line in SCHEMA_MD.read_text().splitlines():
        heading = re.match(r"^## (\w+)$", line)
        if heading:
            current = tables.setdefault(heading.group(1), [])
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is not None and len(cells) == 4 and cells[0] not in ("column", "---"):
            current.append((cells[0], cells[1], cells[2] == "yes"))
    return tables


def test_schema_md_matches_the_writer_column_for_column():
    written = {table: [(c.name, c.type, c.nullable) for c in columns] for table, columns in export_files.TABLES.items()}
    assert documented_tables() == written


def test_the_gateway_docstring_names_every_column():
    doc = replog.gateway.__doc__
    for columns in export_files.TABLES.values():
        for column in columns:
            assert column.name in doc, column.name


def test_schema_versions_agree_and_the_tables_cover_the_stream_rows():
    assert gateway_export.SCHEMA_VERSION == export_files.SCHEMA_VERSION == 1
    for table, message in (("cluster", admin_pb2.ClusterRow), ("brokers", admin_pb2.BrokerRow),
                           ("partitions", admin_pb2.PartitionRow)):
        assert {c.name for c in export_files.TABLES[table]} == set(message.DESCRIPTOR.fields_by_name)


def test_arrow_schema_carries_the_version():
    schema = export_files.arrow_schema("partitions")
    assert schema.metadata[b"replog.schema_version"] == b"1"
    assert str(schema.field("replicas").type) == "list<item: int32>"
