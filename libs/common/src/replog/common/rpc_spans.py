"""Spans of the calls replog's services make to each other, in OpenTelemetry's RPC semantic conventions.

Theory of operation
-------------------
Each control-plane call (the controller's LeaderAndIsr, UpdateMetadata and StopReplica to a broker;
a broker's AlterPartition, ControlledShutdown and LogDirsOffline to the controller) is a CLIENT span
where it is made (`client_call`) and a SERVER span where it is handled (`traced_servicer`), both
named `<package.Service>/<Method>` (`replog.v1.BrokerControlService/LeaderAndIsr`) with the
attributes `rpc.system` ("grpc"), `rpc.service`, `rpc.method` and `rpc.grpc.status_code` (the
numeric gRPC status), and `server.address` / `server.port` on the client. The client's span context
rides in the call's metadata (W3C traceparent), so the server span is its child and the handler's
work (a broker becoming leader) joins the caller's trace.

A failed call has status ERROR, a description, and `error.type`: the gRPC status code's name when
the call itself failed (UNAVAILABLE, DEADLINE_EXCEEDED, ...), or the `ErrorCode` name when it was
answered with one. replog answers refusals in the message (a stale controller epoch is an OK gRPC
status carrying STALE_CONTROLLER_EPOCH), and such a refusal is a failure to its caller, so both
ends mark it.

The data path (Produce, Fetch, the replication stream) is not traced here: a span per request
would cost it throughput, and its metrics say how it does.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Iterator

import grpc
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from replog.common import telemetry
from replog.common.error_codes import ErrorCode

tracer = trace.get_tracer("replog.rpc")

RPC_SYSTEM = "grpc"


def span_name(service: str, method: str) -> str:
    return f"{service}/{method}"


def _rpc_attributes(service: str, method: str) -> dict:
    return {"rpc.system": RPC_SYSTEM, "rpc.service": service, "rpc.method": method}


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def mark_answer(span: trace.Span, reply) -> None:
    """Mark `span` failed when `reply` carries an error code (a replog refusal); answers without one pass."""
    code = getattr(reply, "error_code", 0)
    if code:
        name = _error_name(code)
        message = getattr(reply, "error_message", "")
        telemetry.mark_failed(span, name, f"{name}: {message}" if message else name)


def _mark_status(span: trace.Span, code: grpc.StatusCode, details: str | bytes | None) -> None:
    if isinstance(details, bytes):  # a server context keeps its details encoded
        details = details.decode(errors="replace")
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code is not grpc.StatusCode.OK:
        telemetry.mark_failed(span, code.name, f"{code.name}: {details}" if details else code.name)


class ClientCall:
    """The span of one outgoing call: its `metadata` carries the span's context to the server."""

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def metadata(self) -> list[tuple[str, str]]:
        return telemetry.inject_metadata()

    def answered(self, reply):
        """Record the answer (OK to gRPC, and failed when it carries an error code); returns it."""
        self.span.set_attribute("rpc.grpc.status_code", grpc.StatusCode.OK.value[0])
        mark_answer(self.span, reply)
        return reply


@contextmanager
def client_call(service: str, method: str, address: str, attributes: dict | None = None) -> Iterator[ClientCall]:
    """A CLIENT span around one call to `address` (host:port); a grpc.RpcError leaving it marks it failed."""
    host, _, port = address.rpartition(":")
    span_attributes = {**_rpc_attributes(service, method), "server.address": host,
                       **({"server.port": int(port)} if port.isdigit() else {}), **(attributes or {})}
    with tracer.start_as_current_span(span_name(service, method), kind=SpanKind.CLIENT, attributes=span_attributes,
                                      record_exception=False, set_status_on_exception=False) as span:
        try:
            yield ClientCall(span)
        except grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
            _mark_status(span, code, exc.details() if callable(getattr(exc, "details", None)) else None)
            raise


class _TracedServicer:
    def __init__(self, servicer, service: str) -> None:
        self._servicer = servicer
        self._service = service

    def __getattr__(self, name: str):
        handler = getattr(self._servicer, name)
        if not name[:1].isupper() or not callable(handler):
            return handler
        return functools.partial(self._handle, name, handler)

    def _handle(self, method: str, handler, request, context):
        parent = telemetry.extract_context(context.invocation_metadata())
        attributes = {**_rpc_attributes(self._service, method), "network.peer.address": context.peer()}
        with tracer.start_as_current_span(span_name(self._service, method), context=parent, kind=SpanKind.SERVER,
                                          attributes=attributes, record_exception=False,
                                          set_status_on_exception=False) as span:
            try:
                reply = handler(request, context)
            except Exception:
                _mark_status(span, context.code() or grpc.StatusCode.UNKNOWN, context.details())
                raise
            _mark_status(span, context.code() or grpc.StatusCode.OK, context.details())
            mark_answer(span, reply)
            return reply


def traced_servicer(servicer, service: str):
    """`servicer` with each of its (unary) methods handled inside a SERVER span of `service`.

    The handler runs with that span current: spans it starts without naming a parent are its
    children, and its log lines carry the trace's id (replog.common.logs)."""
    return _TracedServicer(servicer, service)
