"""gRPC AdminService: a thin edge. Each method hands the request to its handler (topics, cluster,
reassignments, elections, export, acls, quotas) and maps refusals and ZooKeeper failures to gRPC statuses
whose message names the bad value. Who may call each method (users only: a service certificate
administers nothing) and the ACLs a user needs, and the trimming of listings to what the user may
describe, are the method table's (replog.common.security.rules), applied before a handler runs."""

from __future__ import annotations

import functools
import logging
from typing import NoReturn

import grpc
from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError

from replog.common.errors import AdminError
from replog.common.topic_admin.core.refusal import Refusal
from replog.common.zk.bulk import BulkReadError
from replog.common.zk.client import ZkUnavailableError
from replog.common.zk.schema import ZkDataError
from replog.gateway import acls, cluster, elections, export, quotas, reassignments, records, topics
from replog.gateway.deps import GatewayDeps
from replog.gateway.metrics import GatewayMetrics
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


def _unary(name: str, handler):
    @functools.wraps(handler)
    def method(self, request, context):
        try:
            answer = handler(self._deps, request)
        except Exception as exc:
            self._abort(name, exc, context)
        self._metrics.answered(name, None)
        return answer

    return method


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, deps: GatewayDeps, metrics: GatewayMetrics) -> None:
        self._deps = deps
        self._metrics = metrics

    def _abort(self, method: str, exc: Exception, context) -> NoReturn:
        """Answer a failed request with its status (counted), or re-raise a bug (counted as UNKNOWN, which
        gRPC answers, and logs)."""
        error = admin_error(exc)
        self._metrics.answered(method, grpc.StatusCode.UNKNOWN if error is None else error.status)
        if error is None:
            raise exc
        context.abort(error.status, error.message)

    CreateTopic = _unary("CreateTopic", topics.create_topic)
    DeleteTopic = _unary("DeleteTopic", topics.delete_topic)
    ListTopics = _unary("ListTopics", topics.list_topics)
    DescribeTopics = _unary("DescribeTopics", topics.describe_topics)
    CreatePartitions = _unary("CreatePartitions", topics.create_partitions)
    AlterTopicConfigs = _unary("AlterTopicConfigs", topics.alter_topic_configs)
    DescribeCluster = _unary("DescribeCluster", cluster.describe_cluster)
    GenerateReassignment = _unary("GenerateReassignment", reassignments.generate)
    ExecuteReassignment = _unary("ExecuteReassignment", reassignments.execute)
    VerifyReassignment = _unary("VerifyReassignment", reassignments.verify)
    CancelReassignment = _unary("CancelReassignment", reassignments.cancel)
    ListReassignments = _unary("ListReassignments", reassignments.list_in_progress)
    ElectLeaders = _unary("ElectLeaders", elections.elect_leaders)
    CreateAcls = _unary("CreateAcls", acls.create_acls)
    DescribeAcls = _unary("DescribeAcls", acls.describe_acls)
    DeleteAcls = _unary("DeleteAcls", acls.delete_acls)
    DeleteRecords = _unary("DeleteRecords", records.delete_records)
    AlterClientQuotas = _unary("AlterClientQuotas", quotas.alter_client_quotas)
    DescribeClientQuotas = _unary("DescribeClientQuotas", quotas.describe_client_quotas)

    def ExportTopology(self, request, context):
        try:
            rows = export.export_topology(self._deps, request)
        except Exception as exc:
            self._abort("ExportTopology", exc, context)
        try:
            yield from rows
        except Exception:
            self._metrics.answered("ExportTopology", grpc.StatusCode.UNKNOWN)  # a bug mid-stream: gRPC answers UNKNOWN
            raise
        self._metrics.answered("ExportTopology", None)
