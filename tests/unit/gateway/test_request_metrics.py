"""The gateway counts every AdminService request its handlers ran, and the failed ones by method and
status (ReplogGatewayErrors reads them): a refusal under its own status, ZooKeeper out of reach as
UNAVAILABLE, a bug as UNKNOWN."""

from __future__ import annotations

import grpc
import pytest
from prometheus_client import CollectorRegistry

from replog.common.errors import AdminError
from replog.common.zk.client import ZkUnavailableError
from replog.gateway.metrics import GatewayMetrics
from replog.gateway.servicer import AdminServicer, _unary


class Aborted(Exception):
    pass


class Context:
    """What a handler's context does when the servicer answers with a status: gRPC raises."""

    def abort(self, status, message):
        raise Aborted(status, message)


def answer(deps, request):
    return request


def refuse(deps, request):
    raise AdminError(grpc.StatusCode.INVALID_ARGUMENT, "no such topic name")


def lose_zookeeper(deps, request):
    raise ZkUnavailableError("connection lost")


def break_(deps, request):
    raise KeyError("a bug")


class Servicer(AdminServicer):
    Answer = _unary("Answer", answer)
    Refuse = _unary("Refuse", refuse)
    LoseZookeeper = _unary("LoseZookeeper", lose_zookeeper)
    Break = _unary("Break", break_)


@pytest.fixture
def served():
    registry = CollectorRegistry()
    return Servicer(deps=None, metrics=GatewayMetrics(registry)), registry


def test_each_request_is_counted_and_each_failure_by_its_status(served):
    servicer, registry = served
    assert servicer.Answer("request", Context()) == "request"
    with pytest.raises(Aborted):
        servicer.Refuse("request", Context())
    with pytest.raises(Aborted):
        servicer.LoseZookeeper("request", Context())
    with pytest.raises(KeyError):
        servicer.Break("request", Context())

    def requests(method):
        return registry.get_sample_value("replog_gateway_requests_total", {"method": method})

    def errors(method, code):
        return registry.get_sample_value("replog_gateway_request_errors_total", {"method": method, "code": code})

    assert [requests(m) for m in ("Answer", "Refuse", "LoseZookeeper", "Break")] == [1, 1, 1, 1]
    assert errors("Answer", "UNKNOWN") is None
    assert errors("Refuse", "INVALID_ARGUMENT") == 1
    assert errors("LoseZookeeper", "UNAVAILABLE") == 1
    assert errors("Break", "UNKNOWN") == 1
