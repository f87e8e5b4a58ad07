"""replog admin gateway: the stateless front door for operators and gRPC clients.

Layout: ``core/`` decides (pure: names, health flags, topic plans,
reassignments, elections); ``zk_view`` reads a snapshot with the bulk reader;
``topics``, ``cluster``, ``reassignments``, ``elections`` and ``export`` handle
the AdminService calls and write decisions with ``zk_writes`` (one
version-checked transaction each); ``log_stats`` asks brokers for offsets;
``servicer`` maps refusals to gRPC statuses. Several gateways may run at once:
none keeps state between calls, ZooKeeper's version checks settle races.

The topology export
-------------------
``ExportTopology`` streams three tables (cluster, brokers, partitions), one row per
message (partition rows optionally batched); ``replog export --format parquet|ndjson
--out DIR`` writes them as files. The columns and the schema version are defined once,
in ``replog.common.export_schema``; docs/export-schema.md lists them with their
meanings. The health flags mean what kafka-topics' flags mean (core/health.py).
"""
