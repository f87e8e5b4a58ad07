"""Health's List answers every service a server serves; the library's servicer left it unimplemented, so
any caller could fill a server's log with tracebacks (found by the RPC fuzz, tests/fuzz/)."""

from __future__ import annotations

from grpc_health.v1 import health_pb2

from replog.common.grpc_server import _HealthServicer

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def test_list_names_every_service_with_its_status():
    servicer = _HealthServicer()
    servicer.set("", SERVING)
    servicer.set("replog.v1.LogService", NOT_SERVING)
    answer = servicer.List(health_pb2.HealthListRequest(), context=None)
    assert {name: s.status for name, s in answer.statuses.items()} == {"": SERVING, "replog.v1.LogService": NOT_SERVING}
