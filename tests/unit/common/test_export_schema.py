"""The export schema has one owner, and every reader and writer takes it from there."""

from __future__ import annotations

from replog.cli import export_files
from replog.common import export_schema
from replog.gateway import export as gateway_export
from replog.v1 import admin_pb2


def test_the_tables_cover_the_stream_rows_field_for_field():
    for table, message in (("cluster", admin_pb2.ClusterRow), ("brokers", admin_pb2.BrokerRow),
                           ("partitions", admin_pb2.PartitionRow), ("groups", admin_pb2.GroupRow),
                           ("group_offsets", admin_pb2.GroupOffsetRow)):
        assert set(export_schema.column_names(table)) == set(message.DESCRIPTOR.fields_by_name)


def test_the_gateway_and_the_writer_use_the_one_version_and_tables():
    assert gateway_export.SCHEMA_VERSION is export_schema.SCHEMA_VERSION
    assert export_files.TABLES is export_schema.TABLES
    assert set(export_files.TopologyTables().columns) == set(export_schema.TABLE_NAMES)


def test_arrow_schema_carries_the_version_and_nullability():
    schema = export_schema.arrow_schema("brokers")
    assert schema.metadata[b"replog.schema_version"] == str(export_schema.SCHEMA_VERSION).encode()
    assert schema.metadata[b"replog.table"] == b"brokers"
    assert [f.name for f in schema if f.nullable] == ["host", "port", "rack"]
    assert str(export_schema.arrow_schema("partitions").field("replicas").type) == "list<item: int32>"
    assert export_schema.arrow_schema("cluster", version=7).metadata[b"replog.schema_version"] == b"7"


def test_spark_ddl_is_derived():
    assert export_schema.ddl("cluster") == ("`controller_id` int, `controller_epoch` int, `exported_at_ms` bigint, "
                                            "`schema_version` int")
    assert "`replicas` array<int>" in export_schema.ddl("partitions")
