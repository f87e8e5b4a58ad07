"""The server interceptor that applies the authorization rules (rules.py) to every call.

Python's server interceptors see a call's method and metadata but not its peer, so this one wraps
the handler's behaviour: the wrapper reads the peer's principal from the call's context and refuses
before the servicer runs (nothing is executed, nothing changes). Wrapped handlers are built once
per method and reused, so a call costs the principal look-up (a cached dictionary read) and one
rule look-up; a stream of requests that speak for a broker costs one comparison per request.

A refusal answers UNAUTHENTICATED (no identity) or PERMISSION_DENIED (wrong kind, or a broker
speaking for another), with a message saying what would be allowed, and is logged once per
(principal, method, reason) with the peer's identity and address: a peer retrying in a loop does
not flood the log.
"""

from __future__ import annotations

import logging
import threading

import grpc

from replog.common.readiness_gate import HANDLER_OF_KIND
from replog.common.security.principal import Principal, peer_principal
from replog.common.security.rules import Refusal, decide, decide_speaks_for, speaks_for_reader

log = logging.getLogger(__name__)

REFUSALS_LOGGED_MAX = 10_000  # the once-only memory is bounded; past it, refusals are logged again

# Attributes of a handler's behaviour that gRPC's server reads (the health servicer's Watch sets them).
_BEHAVIOUR_ATTRIBUTES = ("experimental_non_blocking", "experimental_thread_pool")


class Authorizer(grpc.ServerInterceptor):
    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}
        self._logged: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

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

    # --- refusals -----------------------------------------------------------------------

    def _refuse(self, context, principal: Principal | None, method: str, refusal: Refusal):
        key = (str(principal), method, refusal.reason)
        with self._lock:
            first = key not in self._logged
            if first:
                if len(self._logged) >= REFUSALS_LOGGED_MAX:
                    self._logged.clear()
                self._logged.add(key)
        if first:
            log.warning("refused %s from %s at %s: %s (%s; further refusals alike are not logged)",
                        method, principal or "a peer without identity", context.peer(), refusal.reason,
                        refusal.code)
        context.abort(getattr(grpc.StatusCode, refusal.code), refusal.message)

    def _admit(self, context, method: str) -> Principal:
        """The caller's principal if it may call `method`; aborts the call otherwise."""
        principal = peer_principal(context)
        refusal = decide(principal, method)
        if refusal is not None:
            self._refuse(context, principal, method, refusal)
        return principal

    # --- wrapping -----------------------------------------------------------------------

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        streaming = (handler.request_streaming, handler.response_streaming)
        behaviour = {
            (False, False): handler.unary_unary, (False, True): handler.unary_stream,
            (True, False): handler.stream_unary, (True, True): handler.stream_stream,
        }[streaming]
        read_id = speaks_for_reader(method)
        admit, refuse = self._admit, self._refuse

        if read_id is None:
            def guarded(request, context, *rest):
                admit(context, method)
                return behaviour(request, context, *rest)
        elif not handler.request_streaming:
            def guarded(request, context, *rest):
                principal = admit(context, method)
                refusal = decide_speaks_for(principal, method, read_id(request))
                if refusal is not None:
                    refuse(context, principal, method, refusal)
                return behaviour(request, context, *rest)
        else:
            def guarded(requests, context, *rest):
                principal = admit(context, method)
                own_id = principal.service_id

                def checked():
                    for request in requests:
                        claimed = read_id(request)
                        if claimed != own_id:
                            refuse(context, principal, method, decide_speaks_for(principal, method, claimed))
                        yield request
                return behaviour(checked(), context, *rest)

        for name in _BEHAVIOUR_ATTRIBUTES:  # how gRPC runs it: a non-blocking health Watch stays non-blocking
            if hasattr(behaviour, name):
                setattr(guarded, name, getattr(behaviour, name))
        make = HANDLER_OF_KIND[streaming]
        return make(guarded, request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)
