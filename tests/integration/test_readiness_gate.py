"""The readiness gate, in-process: until it is opened every kind of RPC (unary and streaming either
way) is refused with UNAVAILABLE and the gate's reason, while health answers NOT_SERVING."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.grpc_server import ServiceBinding, start_server
from replog.common.readiness_gate import ReadinessGate

pytestmark = pytest.mark.integration

ECHO_SERVICE = "test.Echo"
KINDS = {
    "UnaryUnary": grpc.unary_unary_rpc_method_handler,
    "UnaryStream": grpc.unary_stream_rpc_method_handler,
    "StreamUnary": grpc.stream_unary_rpc_method_handler,
    "StreamStream": grpc.stream_stream_rpc_method_handler,
}


def _echo(kind: str):
    """A handler of `kind` answering b"ok" (raw bytes: no protobuf needed)."""
    def unary_unary(request, context):
        return b"ok"

    def unary_stream(request, context):
        yield b"ok"

    def stream_unary(requests, context):
        for _ in requests:
            pass
        return b"ok"

    def stream_stream(requests, context):
        for _ in requests:
            yield b"ok"

    behaviour = {"UnaryUnary": unary_unary, "UnaryStream": unary_stream, "StreamUnary": stream_unary,
                 "StreamStream": stream_stream}[kind]
    return KINDS[kind](behaviour)


def _add_echo(servicer, server) -> None:
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        ECHO_SERVICE, {kind: _echo(kind) for kind in KINDS}),))


def _call(channel: grpc.Channel, kind: str):
    method = f"/{ECHO_SERVICE}/{kind}"
    if kind == "UnaryUnary":
        return channel.unary_unary(method)(b"x", timeout=5)
    if kind == "UnaryStream":
        return list(channel.unary_stream(method)(b"x", timeout=5))
    if kind == "StreamUnary":
        return channel.stream_unary(method)(iter([b"x"]), timeout=5)
    return list(channel.stream_stream(method)(iter([b"x"]), timeout=5))


def test_the_gate_refuses_every_kind_of_rpc_until_opened_while_health_answers():
    gate = ReadinessGate("waiting for ZooKeeper at nowhere:1")
    server = start_server([ServiceBinding(ECHO_SERVICE, _add_echo, None)], host="127.0.0.1", port=0,
                          serving=False, interceptors=[gate])
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
                health_pb2.HealthCheckResponse.NOT_SERVING
            for kind in KINDS:
                with pytest.raises(grpc.RpcError) as refused:
                    _call(channel, kind)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, kind
                assert refused.value.details() == "waiting for ZooKeeper at nowhere:1", kind
            gate.open()
            server.set_serving(True)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
                health_pb2.HealthCheckResponse.SERVING
            assert [_call(channel, kind) for kind in KINDS] == [b"ok", [b"ok"], b"ok", [b"ok"]]
    finally:
        server.stop(0)
