"""gRPC AdminService: a thin edge. Each method hands the request to its handler
(topics, cluster, reassignments, elections, export) and maps refusals and
ZooKeeper failures to gRPC statuses whose message names the bad value."""

from __future__ import annotations

import functools
import logging

import grpc
from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError

from replog.common.errors import AdminError
from replog.common.zk.bulk import BulkReadError
from replog.common.zk.client import ZkUnavailableError
from replog.common.zk.schema import ZkDataError
from replog.gateway import cluster, elections, export, reassignments, topics
from replog.gateway.core.refusal import Refusal
from replog.gateway.deps import GatewayDeps
from replog.v1 import admin_pb2_grpc

log = logging.getLogger(__name__)

_ZK_UNREACHABLE = (BulkReadError, ZkUnavailableError, ConnectionLoss, OperationTimeoutError, SessionExpiredError,
                   KazooTimeoutError, OSError)


def admin_error(exc: BaseException) -> AdminError | None:
    """The status to answer with, or None for a bug (let gRPC answer UNKNOWN and log it)."""
    if isinstance(exc, AdminError):
        return exc
    if isinstance(exc, Refusal):
        return AdminError(grpc.StatusCode[exc.status.value], exc.message)
    if isinstance(exc, ZkDataError):
        return AdminError(grpc.StatusCode.INTERNAL, f"ZooKeeper holds data the gateway cannot read: {exc}")
    if isinstance(exc, _ZK_UNREACHABLE):
        return AdminError(grpc.StatusCode.UNAVAILABLE, f"ZooKeeper is unavailable: {exc or type(exc).__name__}")
    return None


def _unary(handler):
    @functools.wraps(handler)
    def method(self, request, context):
        try:
            return handler(self._deps, request)
        except Exception as exc:
            error = admin_error(exc)
            if error is None:
                raise
            context.abort(error.status, error.message)

    return method


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, deps: GatewayDeps) -> None:
        self._deps = deps

    CreateTopic = _unary(topics.create_topic)
    DeleteTopic = _unary(topics.delete_topic)
    ListTopics = _unary(topics.list_topics)
    DescribeTopics = _unary(topics.describe_topics)
    CreatePartitions = _unary(topics.create_partitions)
    AlterTopicConfigs = _unary(topics.alter_topic_configs)
    DescribeCluster = _unary(cluster.describe_cluster)
    GenerateReassignment = _unary(reassignments.generate)
    ExecuteReassignment = _unary(reassignments.execute)
    VerifyReassignment = _unary(reassignments.verify)
    CancelReassignment = _unary(reassignments.cancel)
    ListReassignments = _unary(reassignments.list_in_progress)
    ElectLeaders = _unary(elections.elect_leaders)

    def ExportTopology(self, request, context):
        try:
            rows = export.export_topology(self._deps, request)
        except Exception as exc:
            error = admin_error(exc)
            if error is None:
                raise
            context.abort(error.status, error.message)
        yield from rows
