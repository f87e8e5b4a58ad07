"""What every server interceptor that wraps a method's handler shares.

A gRPC handler is one of four kinds, by (request streaming, response streaming); a wrapper must be
made as a handler of the same kind with the same (de)serializers, and keep the attributes that tell
gRPC how to run the behaviour (a non-blocking health Watch stays non-blocking). The interceptors that
wrap every method (the authorizer, the edge guard) wrap each method once and reuse the wrapper
while the server hands them the same handler.
"""

from __future__ import annotations

import grpc

HANDLER_OF_KIND = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}

_BEHAVIOUR_ATTRIBUTES = ("experimental_non_blocking", "experimental_thread_pool")


def behaviour_of(handler: grpc.RpcMethodHandler):
    """The function a handler runs, whatever its kind."""
    return {
        (False, False): handler.unary_unary, (False, True): handler.unary_stream,
        (True, False): handler.stream_unary, (True, True): handler.stream_stream,
    }[(handler.request_streaming, handler.response_streaming)]


def rewrapped(handler: grpc.RpcMethodHandler, guarded) -> grpc.RpcMethodHandler:
    """A handler of `handler`'s kind that runs `guarded`, which gRPC runs as it ran the original."""
    behaviour = behaviour_of(handler)
    for name in _BEHAVIOUR_ATTRIBUTES:
        if hasattr(behaviour, name):
            setattr(guarded, name, getattr(behaviour, name))
    make = HANDLER_OF_KIND[(handler.request_streaming, handler.response_streaming)]
    return make(guarded, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)


class WrappingInterceptor(grpc.ServerInterceptor):
    """Wraps every method's handler with `_wrap(method, handler)`, once per handler."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None:
            return None  # UNIMPLEMENTED, as without the interceptor
        method = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        raise NotImplementedError
