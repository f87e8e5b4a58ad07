"""replog admin gateway: the stateless front door for operators and gRPC clients.

Layout: ``core/`` decides (pure: names, health flags, topic plans,
reassignments, elections); ``zk_view`` reads a snapshot with the bulk reader;
``topics``, ``cluster``, ``reassignments``, ``elections`` and ``export`` handle
the AdminService calls and write decisions with ``zk_writes`` (one
version-checked transaction each); ``log_stats`` asks brokers for offsets;
``servicer`` maps refusals to gRPC statuses. Several gateways may run at once:
none keeps state between calls, ZooKeeper's version checks settle races.

Topology export, schema version 1
---------------------------------
``ExportTopology`` streams three tables, one row per message (partition rows
optionally batched); ``replog export --format parquet|ndjson --out DIR`` writes
them as ``DIR/cluster.*``, ``DIR/brokers.*``, ``DIR/partitions.*`` and
``DIR/_manifest.json``. SCHEMA.md next to this file has every column with its
meaning; in short:

* cluster (1 row): controller_id int32 (-1: none), controller_epoch int32,
  exported_at_ms int64, schema_version int32.
* brokers: broker_id int32, host string (null when not registered), port int32
  (null when not registered), rack string (null when none), alive bool,
  controller bool.
* partitions: topic string, partition int32, leader int32 (-1: offline),
  leader_epoch int32 (-1: no state yet), replicas list<int32>, isr list<int32>,
  preferred_leader int32, under_replicated bool, unavailable bool,
  under_min_isr bool, min_insync_replicas int32, log_end_offset int64,
  high_watermark int64, size_bytes int64 (the last three from the leader's
  DescribeReplicas, -1 when unknown or not asked).

The health flags mean what kafka-topics' flags mean (core/health.py).
"""
