"""DeleteRecords: check the request against ZooKeeper and the leaders, then move each log start.

The decisions are core/records.py's; this module reads the snapshot, asks the
leaders for their high watermarks (log_stats.py), refuses an offset above one
before anything changes, and then calls `LogService.AdvanceLogStartOffset` on
each leader, one call per leader. A leader that fails in transit gives its
partitions BROKER_NOT_AVAILABLE; the others' deletions stand.
"""

from __future__ import annotations

import grpc

from replog.common.error_codes import ErrorCode
from replog.common.topic_admin.zk_view import load_view
from replog.gateway.core.records import Deletion, Routed, check_high_watermarks, route_deletions
from replog.gateway.deps import GatewayDeps
from replog.gateway.log_stats import describe_replicas
from replog.v1 import admin_pb2, log_pb2, log_pb2_grpc


def delete_records(deps: GatewayDeps, request: admin_pb2.DeleteRecordsRequest) -> admin_pb2.DeleteRecordsResponse:
    deletions = [Deletion(p.topic, p.partition, p.offset) for p in request.partitions]
    view = load_view(deps.connect, topics=sorted({d.topic for d in deletions}), states=True)
    routed = route_deletions(view, deletions)
    by_leader: dict[int, list[Routed]] = {}
    for item in routed:
        by_leader.setdefault(item.leader_id, []).append(item)
    asked = {leader: [(i.deletion.topic, i.deletion.partition) for i in items] for leader, items in by_leader.items()}
    described = describe_replicas(deps, view.brokers, asked)
    check_high_watermarks(routed, {tp: d.high_watermark for replicas in described.values()
                                   for tp, d in replicas.items() if d.leader})
    results: dict[tuple[str, int], admin_pb2.RecordsDeletionResult] = {}
    for leader, items in sorted(by_leader.items()):
        results.update(_advance_on(deps, view.brokers[leader], leader, items))
    return admin_pb2.DeleteRecordsResponse(partitions=[results[(d.topic, d.partition)] for d in deletions])


def _advance_on(deps: GatewayDeps, registration, leader: int, items: list[Routed]):
    request = log_pb2.AdvanceLogStartOffsetRequest(partitions=[
        log_pb2.LogStartOffsetTarget(topic=i.deletion.topic, partition=i.deletion.partition, offset=i.deletion.offset)
        for i in items])
    try:
        stub = log_pb2_grpc.LogServiceStub(deps.channels.get(f"{registration.host}:{registration.port}"))
        reply = stub.AdvanceLogStartOffset(request, timeout=deps.broker_rpc_timeout_s)
    except grpc.RpcError as exc:
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        return {(i.deletion.topic, i.deletion.partition): admin_pb2.RecordsDeletionResult(
            topic=i.deletion.topic, partition=i.deletion.partition, error_code=ErrorCode.BROKER_NOT_AVAILABLE,
            error_message=f"leader {leader} did not answer: {detail}; run the request again", low_watermark=-1)
            for i in items}
    return {(r.topic, r.partition): admin_pb2.RecordsDeletionResult(
        topic=r.topic, partition=r.partition, error_code=r.error_code, error_message=r.error_message,
        low_watermark=r.log_start_offset) for r in reply.partitions}
