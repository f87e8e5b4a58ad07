"""ExportTopology: the cluster's topology as a stream of table rows.

The stream is the export (its tables are replog.common.export_schema's,
described in docs/export-schema.md); the gateway writes no files and keeps nothing, the CLI turns the
stream into Parquet or NDJSON. Order: one ClusterRow, the BrokerRows in id
order, then the PartitionRows by topic and partition, one per message or in
batches of up to ``partition_batch_size`` (capped at ``PARTITION_BATCH_MAX``
to bound message size, about 100 bytes a row).

The snapshot is read before the first row is sent, so a ZooKeeper failure is a
clean status, not a stream cut short. With include_log_stats every live broker
is asked once, in parallel, for all its replicas; LEO, HW and size come from
the partition's leader and are -1 when it did not answer.

With include_groups the GroupRows (by group id) and then the GroupOffsetRows (by
group, topic and partition) follow the partitions: every live broker is asked for
the groups it coordinates (group_stats.py), and the replicas too, since lag is the
leader's high watermark minus the committed offset (-1 when the leader did not
answer). Groups are collected before the first row, like the rest.
"""

from __future__ import annotations

from typing import Iterator

from replog.common.export_schema import SCHEMA_VERSION
from replog.common.topic_admin.core.topics import describe_partitions
from replog.common.topic_admin.zk_view import load_view
from replog.gateway import log_stats
from replog.gateway.cluster import broker_descriptions
from replog.gateway.deps import GatewayDeps
from replog.gateway.group_stats import GroupSnapshot, describe_groups
from replog.v1 import admin_pb2

PARTITION_BATCH_MAX = 10_000


def export_topology(
    deps: GatewayDeps, request: admin_pb2.ExportTopologyRequest
) -> Iterator[admin_pb2.ExportTopologyResponse]:
    view = load_view(deps.connect, states=True)
    exported_at_ms = deps.clock.now_ms()
    asked = request.include_log_stats or request.include_groups
    stats = log_stats.describe_replicas(deps, view.brokers) if asked else {}
    groups = describe_groups(deps, view.brokers) if request.include_groups else []
    batch_size = min(max(request.partition_batch_size, 1), PARTITION_BATCH_MAX)
    rows = _rows(view, stats if request.include_log_stats else {}, exported_at_ms, batch_size)
    return _with_groups(rows, _group_rows(view, stats, groups))


def _with_groups(rows, group_rows) -> Iterator[admin_pb2.ExportTopologyResponse]:
    yield from rows
    yield from group_rows


def _group_rows(view, stats, groups: list[GroupSnapshot]) -> Iterator[admin_pb2.ExportTopologyResponse]:
    Response = admin_pb2.ExportTopologyResponse
    for g in groups:
        yield Response(group=admin_pb2.GroupRow(group=g.group, state=g.state, generation=g.generation,
                                                members=g.members, coordinator=g.coordinator))
    unknown = log_stats.UNKNOWN
    for g in groups:
        for (topic, partition), committed in sorted(g.committed.items()):
            state = view.topics[topic].states.get(partition) if topic in view.topics else None
            found = log_stats.leader_replica(stats, state.leader, (topic, partition)) if state else None
            end = found.high_watermark if found else unknown
            yield Response(group_offset=admin_pb2.GroupOffsetRow(
                group=g.group, topic=topic, partition=partition, committed_offset=committed, log_end_offset=end,
                lag=max(0, end - committed) if found else unknown))


def _rows(view, stats, exported_at_ms: int, batch_size: int) -> Iterator[admin_pb2.ExportTopologyResponse]:
    Response = admin_pb2.ExportTopologyResponse
    yield Response(cluster=admin_pb2.ClusterRow(
        controller_id=view.controller_id, controller_epoch=view.controller_epoch,
        exported_at_ms=exported_at_ms, schema_version=SCHEMA_VERSION,
    ))
    for b in broker_descriptions(view):
        yield Response(broker=admin_pb2.BrokerRow(
            broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack, alive=b.alive,
            controller=b.broker_id == view.controller_id,
        ))
    rows = _partition_rows(view, stats)
    if batch_size == 1:
        for row in rows:
            yield Response(partition=row)
        return
    batch: list[admin_pb2.PartitionRow] = []
    for row in rows:
        batch.append(row)
        if len(batch) == batch_size:
            yield Response(partition_batch=admin_pb2.PartitionRowBatch(rows=batch))
            batch = []
    if batch:
        yield Response(partition_batch=admin_pb2.PartitionRowBatch(rows=batch))


def _partition_rows(view, stats: log_stats.ReplicasByBroker) -> Iterator[admin_pb2.PartitionRow]:
    Row = admin_pb2.PartitionRow
    unknown = log_stats.UNKNOWN
    for name in sorted(view.topics):
        for d in describe_partitions(view.topics[name], view.brokers):
            h = d.health
            leader_stats = log_stats.leader_replica(stats, h.leader, (name, d.partition)) if stats else None
            yield Row(
                topic=name, partition=d.partition, leader=h.leader, leader_epoch=h.leader_epoch,
                replicas=d.replicas, isr=h.isr, preferred_leader=d.replicas[0] if d.replicas else -1,
                under_replicated=h.under_replicated, unavailable=h.unavailable, under_min_isr=h.under_min_isr,
                log_end_offset=leader_stats.log_end_offset if leader_stats else unknown,
                high_watermark=leader_stats.high_watermark if leader_stats else unknown,
                size_bytes=leader_stats.size_bytes if leader_stats else unknown,
                log_start_offset=leader_stats.log_start_offset if leader_stats else unknown,
                min_insync_replicas=d.min_insync_replicas, elr=h.elr,
            )
