"""Reassignment requests: generate, execute, verify, cancel, list.

The gateway writes targets (and cancels) into /admin/reassign_partitions and the
throttle into /config/reassignment_throttle; the controller does the moving
(see core/reassignments.py for the protocol). Progress in bytes comes from the
leaders' DescribeReplicas, best effort (-1 when a leader cannot tell).
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.common.topic_admin.core.model import NO_ZNODE, ClusterView
from replog.common.topic_admin.zk_view import load_view
from replog.common.topic_admin.zk_writes import Conflict, commit, create_or_set, retrying
from replog.common.zk import schema
from replog.gateway import convert, log_stats
from replog.gateway.core import reassignments as core
from replog.gateway.deps import GatewayDeps
from replog.v1 import admin_pb2, common_pb2

_STATUS = {
    core.Status.IN_PROGRESS: admin_pb2.REASSIGNMENT_STATUS_IN_PROGRESS,
    core.Status.COMPLETE: admin_pb2.REASSIGNMENT_STATUS_COMPLETE,
    core.Status.FAILED: admin_pb2.REASSIGNMENT_STATUS_FAILED,
}


def generate(deps: GatewayDeps, request: admin_pb2.GenerateReassignmentRequest) -> admin_pb2.GenerateReassignmentResponse:
    current, proposed = core.generate(load_view(deps.connect), list(request.topics), list(request.broker_ids), deps.rng)
    return admin_pb2.GenerateReassignmentResponse(
        current=convert.assignment_list(current), proposed=convert.assignment_list(proposed)
    )


def execute(deps: GatewayDeps, request: admin_pb2.ExecuteReassignmentRequest) -> admin_pb2.ExecuteReassignmentResponse:
    plan = convert.entries(request.partitions)

    def attempt() -> core.Execution:
        view = load_view(deps.connect)
        execution = core.plan_execute(view, plan, request.throttle_bytes_per_s)
        tx = deps.kazoo.transaction()
        create_or_set(tx, schema.REASSIGN_PARTITIONS, execution.request.encode(), view.reassignment_version,
                      deps.zk.acl(schema.REASSIGN_PARTITIONS))
        if execution.throttle is not None:
            create_or_set(tx, schema.REASSIGNMENT_THROTTLE, execution.throttle.encode(), view.throttle_version,
                          deps.zk.acl(schema.REASSIGNMENT_THROTTLE))
        _commit_or_conflict(tx)
        return execution

    execution = retrying(attempt, "execute the reassignment")
    return admin_pb2.ExecuteReassignmentResponse(current=convert.assignment_list(execution.current))


def verify(deps: GatewayDeps, request: admin_pb2.VerifyReassignmentRequest) -> admin_pb2.VerifyReassignmentResponse:
    plan = convert.entries(request.partitions)
    topics = {t for t, _, _ in plan}
    view = load_view(deps.connect, topics=topics, states=True)
    targets = core.validate_plan(view, plan, check_brokers=False)
    rows = _progress_rows(deps, view, core.progress(view, targets))
    complete = all(r.status == admin_pb2.REASSIGNMENT_STATUS_COMPLETE for r in rows)
    return admin_pb2.VerifyReassignmentResponse(
        partitions=rows, complete=complete, throttle_removed=complete and _remove_idle_throttle(deps)
    )


def _remove_idle_throttle(deps: GatewayDeps) -> bool:
    """Remove the reassignment throttle when no reassignment runs any more (as Kafka's --verify
    does); a throttle set or a reassignment started meanwhile keeps it (version check)."""
    view = load_view(deps.connect)
    if view.throttle_version == NO_ZNODE or core.in_progress(view):
        return False
    try:
        deps.kazoo.delete(schema.REASSIGNMENT_THROTTLE, version=view.throttle_version)
    except (BadVersionError, NoNodeError):
        return False
    return True


def cancel(deps: GatewayDeps, request: admin_pb2.CancelReassignmentRequest) -> admin_pb2.CancelReassignmentResponse:
    partitions = convert.topic_partitions(request.partitions)

    def attempt() -> core.Cancellation:
        view = load_view(deps.connect)
        cancellation = core.plan_cancel(view, partitions)
        tx = deps.kazoo.transaction()
        create_or_set(tx, schema.REASSIGN_PARTITIONS, cancellation.request.encode(), view.reassignment_version,
                      deps.zk.acl(schema.REASSIGN_PARTITIONS))
        _commit_or_conflict(tx)
        return cancellation

    cancellation = retrying(attempt, "cancel the reassignment")
    return admin_pb2.CancelReassignmentResponse(
        cancelled=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in cancellation.cancelled]
    )


def list_in_progress(deps: GatewayDeps, request: admin_pb2.ListReassignmentsRequest) -> admin_pb2.ListReassignmentsResponse:
    running = core.in_progress(load_view(deps.connect))
    # Second read: partition states only for the topics being moved (leaders, for the lag).
    view = load_view(deps.connect, topics={t for t, _ in running}, states=True)
    running = core.in_progress(view)
    rows = _progress_rows(deps, view, core.progress(view, running))
    return admin_pb2.ListReassignmentsResponse(partitions=rows, throttle_bytes_per_s=view.throttle_bytes_per_s)


def _commit_or_conflict(tx) -> None:
    try:
        commit(tx)
    except (BadVersionError, NodeExistsError, NoNodeError):
        raise Conflict() from None


def _progress_rows(deps: GatewayDeps, view: ClusterView, progresses: list[core.Progress]) -> list:
    asked: dict[int, set[tuple[str, int]]] = {}
    for p in progresses:
        if p.catching_up and p.leader in view.brokers:
            asked.setdefault(p.leader, set()).add((p.topic, p.partition))
    replicas = log_stats.describe_replicas(deps, view.brokers, asked) if asked else {}
    return [
        admin_pb2.ReassignmentProgress(
            topic=p.topic, partition=p.partition, target_replicas=p.target, adding_replicas=p.adding,
            removing_replicas=p.removing, status=_STATUS[p.status],
            bytes_behind=log_stats.bytes_behind(replicas, p.leader, (p.topic, p.partition), p.catching_up)
            if p.status is core.Status.IN_PROGRESS else 0,
        )
        for p in progresses
    ]
