"""``spark.read.format("replog")``: one format, two inputs, told apart by their options.

* ``bootstrap.servers`` (or Spark's Kafka-source spelling, ``kafka.bootstrap.servers``) and
  ``subscribe``: a log's records, batch or streaming, as Spark's Kafka source gives them
  (records/reader.py).
* ``gateway``: the gateway's ExportTopology stream as a DataFrame, below.

    spark.read.format("replog").option("gateway", "127.0.0.1:9090").option("table", "partitions").load()

Options: ``gateway`` (host:port, required), ``table`` (cluster | brokers |
partitions | groups | group_offsets, default partitions), ``log_stats`` (true: the gateway asks every
broker for LEO, HW and size), ``batch_size`` (partition rows per stream message,
default 1000). TLS: ``tls_ca_file``, ``tls_cert_file``, ``tls_key_file`` (else REPLOG_TLS_* in the
driver's environment, else the local cluster's operator certificate), or ``insecure`` (true: plaintext);
resolved on the driver as the CLI does (security/local.py).

The stream is one ordered gRPC server stream (cluster row, broker rows, partition
rows in batches), so the source has one input partition: the read runs in one
Python worker, which turns each PartitionRowBatch into one Arrow record batch
(no per-row Python objects reach Spark). The schema is schema.py's (the export
schema's version, replog.common.export_schema.SCHEMA_VERSION), the same as an export directory's, so every job takes either. A stream whose
cluster row carries another schema version fails the read with one line.

The worker imports this module and the generated protos, hence PYSPARK_PYTHON
must be the project's interpreter (session.py sets it).
"""

from __future__ import annotations

from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from replog.common.export_schema import arrow_schema
from replog.spark import schema

BATCH_SIZE_DEFAULT = 1000
STREAM_TIMEOUT_S = 300.0


class ReplogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "replog"

    def _records(self) -> bool:
        from replog.spark.records.reader import BOOTSTRAP_OPTIONS

        brokers = any(name in self.options for name in BOOTSTRAP_OPTIONS)
        if brokers and "gateway" in self.options:
            raise ValueError("the replog source reads records (bootstrap.servers) or topology (gateway), not both")
        return brokers or "subscribe" in self.options

    def schema(self) -> str:
        if self._records():
            from replog.spark.records.reader import SCHEMA

            return SCHEMA
        return schema.ddl(self._table())

    def streamReader(self, schema):
        from replog.spark.records.reader import RecordsStreamReader

        if not self._records():
            raise ValueError("a stream of the replog source reads records: give bootstrap.servers and subscribe")
        return RecordsStreamReader(self.options)  # it refuses any option it does not take

    def reader(self, schema):  # Spark passes the schema by this name
        if self._records():
            from replog.spark.records.reader import RecordsBatchReader

            return RecordsBatchReader(self.options)  # it refuses any option it does not take
        from replog.spark.records.reader import TLS_OPTIONS, refuse_unknown_options, tls_of

        refuse_unknown_options(self.options, ("gateway", "table", "batch_size", "log_stats", *TLS_OPTIONS),
                               "a read of the topology (gateway)")
        gateway = self.options.get("gateway")
        if not gateway:
            raise ValueError("the replog source needs .option('gateway', 'host:port')")
        batch_size = int(self.options.get("batch_size", BATCH_SIZE_DEFAULT))
        log_stats = str(self.options.get("log_stats", "false")).lower() == "true"
        return ExportTopologyReader(gateway, self._table(), batch_size, log_stats, tls_of(self.options))

    def _table(self) -> str:
        table = self.options.get("table", "partitions")
        if table not in schema.TABLE_NAMES:
            raise ValueError(f"unknown table {table!r} for the replog source (use one of {', '.join(schema.TABLE_NAMES)})")
        return table


class ExportTopologyReader(DataSourceReader):
    def __init__(self, gateway: str, table: str, batch_size: int, log_stats: bool, tls=None) -> None:
        self.gateway = gateway
        self.tls = tls  # TlsFiles, or None for plaintext
        self.table = table
        self.batch_size = batch_size
        self.log_stats = log_stats

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition) -> Iterator:
        from replog.common.channels import CHANNEL_OPTIONS
        from replog.common.security.credentials import open_channel
        from replog.v1 import admin_pb2, admin_pb2_grpc

        request = admin_pb2.ExportTopologyRequest(include_log_stats=self.log_stats,
                                                  include_groups=self.table in schema.MAY_BE_EMPTY,
                                                  partition_batch_size=self.batch_size)
        with open_channel(self.gateway, self.tls, CHANNEL_OPTIONS) as channel:
            stream = admin_pb2_grpc.AdminServiceStub(channel).ExportTopology(request, timeout=STREAM_TIMEOUT_S)
            yield from arrow_batches(stream, self.table, self.gateway)


def arrow_batches(stream, table: str, where: str) -> Iterator:
    """Arrow record batches of one table from the ExportTopology responses."""
    import pyarrow as pa

    # Spark declares every column of a data source nullable and checks each batch against that.
    table_schema = pa.schema([field.with_nullable(True) for field in arrow_schema(table)])
    first = True
    brokers: list = []
    for response in stream:
        kind = response.WhichOneof("row")
        if first:
            if kind != "cluster":
                raise schema.ExportError(f"{where}: the export stream did not start with the cluster row")
            schema.check_version(response.cluster.schema_version, where)
            first = False
        if table == "cluster" and kind == "cluster":
            c = response.cluster
            yield _batch(pa, table_schema, [(c.controller_id, c.controller_epoch, c.exported_at_ms,
                                             c.schema_version)])
            return
        if table == "brokers":
            if kind == "broker":
                b = response.broker
                brokers.append((b.broker_id, b.host or None, b.port or None, b.rack or None, b.alive, b.controller))
            elif kind in ("partition", "partition_batch"):
                break  # brokers come before partitions
        elif table == "partitions":
            if kind == "partition_batch":
                yield _batch(pa, table_schema, [_partition_tuple(r) for r in response.partition_batch.rows])
            elif kind == "partition":
                yield _batch(pa, table_schema, [_partition_tuple(response.partition)])
        elif (table, kind) in (("groups", "group"), ("group_offsets", "group_offset")):
            row = getattr(response, kind)
            yield _batch(pa, table_schema, [tuple(getattr(row, f.name) for f in table_schema)])
    if first:
        raise schema.ExportError(f"{where}: the export stream was empty")
    if table == "brokers" and brokers:
        yield _batch(pa, table_schema, brokers)


def _partition_tuple(r) -> tuple:
    return (r.topic, r.partition, r.leader, r.leader_epoch, list(r.replicas), list(r.isr), r.preferred_leader,
            r.under_replicated, r.unavailable, r.under_min_isr, r.min_insync_replicas, r.log_end_offset,
            r.high_watermark, r.size_bytes, r.log_start_offset, list(r.elr))


def _batch(pa, table_schema, rows: list[tuple]):
    columns = list(zip(*rows)) if rows else [[] for _ in table_schema]
    arrays = [pa.array(list(values), type=field.type) for values, field in zip(columns, table_schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=table_schema)
