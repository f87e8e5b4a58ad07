"""Calling a servicer's methods through the server interceptors, without a server or a network.

The generated `add_*_to_server` functions hand their method handlers to a server; `handlers_of`
gives them a stand-in that keeps them, so a test gets the real handlers (with their streaming kinds)
and runs them through `Authorizer` / `EdgeGuard` as gRPC would: `invoke` asks the interceptor for
the wrapped handler and calls its behaviour with a `FakeContext` whose certificate names `uri`.
"""

from __future__ import annotations

from typing import Any, Callable

import grpc

from replog.common.security.principal import SAN_IDENTITY_KEY


class Aborted(Exception):
    """What `FakeContext.abort` raises, as gRPC's does, with the status and message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code, self.message = code, message


class FakeContext:
    def __init__(self, uri: str | None, peer: str = "ipv4:127.0.0.1:5000") -> None:
        self._uri = uri
        self._peer = peer
        self.callbacks: list[Callable[[], None]] = []
        self.cancelled = False

    def peer_identity_key(self):
        return SAN_IDENTITY_KEY if self._uri is not None else None

    def peer_identities(self):
        return [b"127.0.0.1", self._uri.encode()] if self._uri is not None else None

    def peer(self) -> str:
        return self._peer

    def abort(self, code, message):
        raise Aborted(code, message)

    def is_active(self) -> bool:
        return not self.cancelled

    def add_callback(self, callback) -> bool:
        self.callbacks.append(callback)
        return True

    def cancel(self) -> None:
        self.cancelled = True

    def end(self) -> None:
        """The call ends: its callbacks run, as gRPC runs them."""
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()

    def invocation_metadata(self):
        return ()


class _Collecting:
    def __init__(self) -> None:
        self.handlers: dict[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers) -> None:
        pass

    def add_registered_method_handlers(self, service: str, handlers: dict) -> None:
        for name, handler in handlers.items():
            self.handlers[f"/{service}/{name}"] = handler


def handlers_of(add_to_server: Callable[[Any, Any], None], servicer) -> dict[str, grpc.RpcMethodHandler]:
    """Method path -> the generated handler of `servicer`'s method."""
    collecting = _Collecting()
    add_to_server(servicer, collecting)
    return collecting.handlers


class _Details:
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


def behaviour_of(handler: grpc.RpcMethodHandler):
    return (handler.unary_unary or handler.unary_stream or handler.stream_unary or handler.stream_stream)


def wrapped(interceptors, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """The handler gRPC would run: `interceptors` applied in order, the first outermost."""
    def chain(index: int):
        if index == len(interceptors):
            return lambda details: handler
        return lambda details: interceptors[index].intercept_service(chain(index + 1), details)

    return chain(0)(_Details(method))


def invoke(interceptors, method: str, handler: grpc.RpcMethodHandler, request, context: FakeContext):
    """Run the call: a unary answer, or the list of a stream's answers (requests: an iterable)."""
    behaviour = behaviour_of(wrapped(interceptors, method, handler))
    answer = behaviour(request, context)
    if handler.response_streaming:
        return list(answer)
    return answer
