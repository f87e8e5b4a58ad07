"""Log lines name the span they were written in, and the services' calls are spans in OpenTelemetry's
RPC conventions, marked failed when the call fails or is answered with an error code."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import grpc
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from replog.common import rpc_spans
from replog.common.logs import JsonFormatter, TextFormatter


@pytest.fixture
def finished(monkeypatch):
    """Spans of rpc_spans (and of a test tracer), recorded in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(rpc_spans, "tracer", provider.get_tracer("replog.rpc"))
    yield exporter, provider.get_tracer("test")
    provider.shutdown()


def record(message: str = "LeaderAndIsr applied") -> logging.LogRecord:
    return logging.LogRecord("replog.broker.control.state_changes", logging.INFO, __file__, 1, message, (), None)


def test_a_json_line_inside_a_span_carries_its_trace_and_span_ids(finished):
    _, tracer = finished
    formatter = JsonFormatter("broker", "2")
    assert "trace_id" not in json.loads(formatter.format(record()))
    with tracer.start_as_current_span("broker.become_leader") as span:
        line = json.loads(formatter.format(record()))
    context = span.get_span_context()
    assert line["trace_id"] == format(context.trace_id, "032x") and line["span_id"] == format(context.span_id, "016x")
    assert (line["service"], line["instance"], line["msg"]) == ("broker", "2", "LeaderAndIsr applied")


def test_a_text_line_ends_with_the_ids_inside_a_span(finished):
    _, tracer = finished
    formatter = TextFormatter("broker", "2")
    outside = formatter.format(record())
    assert outside.endswith(" info     broker-2 replog.broker.control.state_changes: LeaderAndIsr applied")
    with tracer.start_as_current_span("broker.become_leader") as span:
        inside = formatter.format(record())
    assert inside.endswith(f" trace_id={span.get_span_context().trace_id:032x} "
                           f"span_id={span.get_span_context().span_id:016x}")


def test_a_failed_call_is_a_client_span_with_error_status_and_the_grpc_code(finished):
    exporter, _ = finished

    class Unavailable(grpc.RpcError):
        def code(self):
            return grpc.StatusCode.UNAVAILABLE

        def details(self):
            return "connection refused"

    with pytest.raises(Unavailable), rpc_spans.client_call("replog.v1.BrokerControlService", "LeaderAndIsr",
                                                           "127.0.0.1:9092") as call:
        assert dict(call.metadata())["traceparent"].split("-")[2] == f"{call.span.get_span_context().span_id:016x}"
        raise Unavailable()
    (span,) = exporter.get_finished_spans()
    assert (span.name, span.kind) == ("replog.v1.BrokerControlService/LeaderAndIsr", SpanKind.CLIENT)
    assert {k: span.attributes[k] for k in ("rpc.system", "rpc.service", "rpc.method", "rpc.grpc.status_code",
                                            "server.address", "server.port", "error.type")} == {
        "rpc.system": "grpc", "rpc.service": "replog.v1.BrokerControlService", "rpc.method": "LeaderAndIsr",
        "rpc.grpc.status_code": 14, "server.address": "127.0.0.1", "server.port": 9092, "error.type": "UNAVAILABLE"}
    assert span.status.status_code is StatusCode.ERROR and "connection refused" in span.status.description


def test_an_answer_with_an_error_code_fails_the_call_and_one_without_passes(finished):
    exporter, _ = finished
    refused = SimpleNamespace(error_code=5, error_message="controller epoch 2 is stale")
    for reply in (refused, SimpleNamespace(error_code=0, error_message="")):
        with rpc_spans.client_call("replog.v1.BrokerControlService", "StopReplica", "broker-1:9092") as call:
            call.answered(reply)
    failed, passed = exporter.get_finished_spans()
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes["error.type"] == "STALE_CONTROLLER_EPOCH"
    assert failed.attributes["rpc.grpc.status_code"] == 0  # the call itself went through
    assert passed.status.status_code is StatusCode.UNSET and "error.type" not in passed.attributes


class _Context:
    """The parts of grpc.ServicerContext a traced servicer reads."""

    def __init__(self, metadata=()) -> None:
        self._metadata = metadata
        self._code = None

    def invocation_metadata(self):
        return self._metadata

    def peer(self):
        return "ipv4:127.0.0.1:50000"

    def code(self):
        return self._code

    def details(self):
        return b"refused"

    def abort(self, code, details):
        self._code = code
        raise RuntimeError(details)


def test_a_traced_servicer_handles_each_call_in_a_server_span_under_the_callers(finished):
    exporter, tracer = finished
    seen = []

    class Servicer:
        def LeaderAndIsr(self, request, context):
            seen.append(tracer.start_span("inside").get_span_context().trace_id)
            return SimpleNamespace(error_code=0)

        def Aborts(self, request, context):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "too many partitions")

    traced = rpc_spans.traced_servicer(Servicer(), "replog.v1.BrokerControlService")
    with rpc_spans.client_call("replog.v1.BrokerControlService", "LeaderAndIsr", "127.0.0.1:1") as call:
        traced.LeaderAndIsr(None, _Context(call.metadata()))
        caller = call.span.get_span_context()
    with pytest.raises(RuntimeError):
        traced.Aborts(None, _Context())
    server, client, aborted = exporter.get_finished_spans()
    assert (server.kind, server.parent.span_id, server.context.trace_id) == (SpanKind.SERVER, caller.span_id,
                                                                          caller.trace_id)
    assert seen == [caller.trace_id]  # the handler ran with the server span current
    assert server.attributes["rpc.grpc.status_code"] == 0 and server.status.status_code is StatusCode.UNSET
    assert aborted.attributes["rpc.grpc.status_code"] == 3 and aborted.status.status_code is StatusCode.ERROR
    assert aborted.attributes["error.type"] == "INVALID_ARGUMENT"
