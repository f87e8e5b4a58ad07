"""The server interceptor every replog server runs after authorization: bounds, limits, idle streams.

For every call, before its handler runs:

1. the request is checked against the bounds on its fields (validation.py); one out of bounds is
   refused with INVALID_ARGUMENT naming the field and the rule. A stream's every message is checked
   as the handler reads it; a bad one ends the stream after the messages before it are answered;
2. with identities (a TLS server), the caller is admitted (admission.py): one call more for it, or
   RESOURCE_EXHAUSTED saying which bound it reached. Given back when the call ends;
3. a request stream is watched for a caller that stops sending (idle_streams.py).

Authorization (security/authorization.py) runs before this, so a refused caller is never counted
and takes nothing. Refusals go to the refusal log (rate-limited) with the caller's address.
"""

from __future__ import annotations

import threading

import grpc

from replog.common.edge.admission import CALL, WATCH, Admission
from replog.common.edge.idle_streams import IdleStreams
from replog.common.edge.validation import RequestChecker
from replog.common.handler_wrapping import WrappingInterceptor, behaviour_of, rewrapped
from replog.common.refusal_log import RefusalLog
from replog.common.security.principal import SERVICE_KINDS, peer_principal

HEALTH_WATCH = "/grpc.health.v1.Health/Watch"



class _Ticket:
    """One admitted call, given back exactly once (by the call's end or its handler's, whichever is first)."""

    __slots__ = ("_admission", "_principal", "_kind", "_as_user", "_lock", "_open")

    def __init__(self, admission: Admission, principal: str, kind: str, as_user: bool) -> None:
        self._admission, self._principal, self._kind, self._as_user = admission, principal, kind, as_user
        self._lock = threading.Lock()
        self._open = True

    def give_back(self) -> None:
        with self._lock:
            if not self._open:
                return
            self._open = False
        self._admission.leave(self._principal, self._kind, counts_as_user=self._as_user)


class EdgeGuard(WrappingInterceptor):
    def __init__(self, *, checker: RequestChecker, idle: IdleStreams, refusals: RefusalLog,
                 admission: Admission | None = None, super_users: frozenset[str] = frozenset()) -> None:
        self._checker = checker
        self._idle = idle
        self._refusals = refusals
        self._admission = admission
        self._super_users = super_users
        super().__init__()

    # --- the checks ---------------------------------------------------------------------------

    def _invalid(self, context, method: str, problem: str) -> None:
        self._refusals.refused(context.peer(), method, "INVALID_ARGUMENT", problem)
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)

    def _admit(self, context, method: str, kind: str, *, at_call_end: bool = True) -> _Ticket | None:
        """Admit the call (None on a server without identities); aborts with RESOURCE_EXHAUSTED if over a bound.
        The ticket is given back when the call ends (`at_call_end`) or by the caller, whichever is first: a
        stream's handler may never run to its end when the peer goes away."""
        admission = self._admission
        if admission is None:
            return None
        principal = peer_principal(context)
        if principal is None:
            return None  # only a TLS server has an admission, and it refused this caller already
        name = str(principal)
        if name in self._super_users:
            return None  # the operators: trusted with the server, and never to be locked out by its users
        as_user = principal.kind not in SERVICE_KINDS
        refused = admission.enter(name, kind, counts_as_user=as_user)
        if refused is not None:
            self._refusals.refused(context.peer(), method, "RESOURCE_EXHAUSTED", refused)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refused)
        ticket = _Ticket(admission, name, kind, as_user)
        if at_call_end and not context.add_callback(ticket.give_back):
            ticket.give_back()  # the call has ended already: its callbacks will not run
        return ticket

    # --- wrapping -------------------------------------------------------------------------------

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        behaviour = behaviour_of(handler)
        kind = WATCH if method == HEALTH_WATCH else CALL
        if getattr(behaviour, "experimental_non_blocking", False):
            guarded = self._non_blocking(method, behaviour, kind)
        elif not handler.request_streaming and not handler.response_streaming:
            guarded = self._unary(method, behaviour, kind)
        elif not handler.request_streaming:
            guarded = self._response_stream(method, behaviour, kind)
        else:
            guarded = self._request_stream(method, behaviour, kind, returns_stream=handler.response_streaming)
        return rewrapped(handler, guarded)

    def _unary(self, method: str, behaviour, kind: str):
        problem, invalid, admit = self._checker.problem, self._invalid, self._admit

        def guarded(request, context):
            found = problem(request)
            if found is not None:
                invalid(context, method, found)
            ticket = admit(context, method, kind, at_call_end=False)  # the handler returns in this thread
            try:
                return behaviour(request, context)
            finally:
                if ticket is not None:
                    ticket.give_back()

        return guarded

    def _non_blocking(self, method: str, behaviour, kind: str):
        """A handler answered without a thread (the health Watch): given back when the call ends."""
        problem, invalid, admit = self._checker.problem, self._invalid, self._admit

        def guarded(request, context, *rest):
            found = problem(request)
            if found is not None:
                invalid(context, method, found)
            admit(context, method, kind)
            return behaviour(request, context, *rest)

        return guarded

    def _response_stream(self, method: str, behaviour, kind: str):
        problem, invalid, admit = self._checker.problem, self._invalid, self._admit

        def guarded(request, context):
            found = problem(request)
            if found is not None:
                invalid(context, method, found)
            ticket = admit(context, method, kind)
            try:
                yield from behaviour(request, context)
            finally:
                if ticket is not None:
                    ticket.give_back()

        return guarded

    def _request_stream(self, method: str, behaviour, kind: str, *, returns_stream: bool):
        problem, invalid, admit, idle = self._checker.problem, self._invalid, self._admit, self._idle

        def checked(requests, found: list[str]):
            for request in requests:
                bad = problem(request)
                if bad is not None:
                    found.append(bad)
                    return
                yield request

        if returns_stream:
            def guarded(requests, context):
                ticket = admit(context, method, kind)
                found: list[str] = []
                try:
                    yield from behaviour(checked(idle.watched(requests, context, method), found), context)
                finally:
                    if ticket is not None:
                        ticket.give_back()
                if found:
                    invalid(context, method, found[0])
        else:
            def guarded(requests, context):
                ticket = admit(context, method, kind)
                found: list[str] = []
                try:
                    response = behaviour(checked(idle.watched(requests, context, method), found), context)
                finally:
                    if ticket is not None:
                        ticket.give_back()
                if found:
                    invalid(context, method, found[0])
                return response

        return guarded
