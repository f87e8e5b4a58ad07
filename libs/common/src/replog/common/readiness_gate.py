"""Refuse a process's own RPCs until it is ready, while health and reflection answer.

A service opens its gRPC port before it waits for ZooKeeper (which may take any time), so that
its health can be asked all along: NOT_SERVING until it has joined. Its own services are bound
from the start but answer UNAVAILABLE, naming what the process waits for, until the gate is
opened. Why not bind them only once ready, on a second server: a client holding this address
from before a restart would get UNIMPLEMENTED from a server without them, which no client retries,
and swapping servers would leave the port unbound for a moment, for anyone to take.
"""

from __future__ import annotations

import grpc

from replog.common.handler_wrapping import HANDLER_OF_KIND

ALWAYS_ANSWERED = ("/grpc.health.v1.Health/", "/grpc.reflection.")



class ReadinessGate(grpc.ServerInterceptor):
    """Closed at first: every RPC but health and reflection is refused with UNAVAILABLE and `reason`."""

    def __init__(self, reason: str) -> None:
        self._reason = reason
        self._open = False

    @property
    def is_open(self) -> bool:
        return self._open

    def open(self) -> None:
        self._open = True

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if self._open or handler is None or handler_call_details.method.startswith(ALWAYS_ANSWERED):
            return handler
        return self._refusal(handler)

    def _refusal(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """A handler of the same kind (so the request is read as the client sends it) that refuses."""
        reason = self._reason

        def refuse(request, context):
            context.abort(grpc.StatusCode.UNAVAILABLE, reason)

        make = HANDLER_OF_KIND[(handler.request_streaming, handler.response_streaming)]
        return make(refuse, request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)
