"""The server interceptor that applies the method table (rules.py) to every call.

Python's server interceptors see a call's method and metadata but not its peer, so this one wraps
the handler's behaviour: the wrapper reads the peer's principal from the call's context and, in
this order, before the servicer runs and before any limit or slot is taken for the call
(edge/guard.py runs after it):

1. refuses a caller without an identity (UNAUTHENTICATED), or of a kind the rule does not admit,
   or a method with no rule (PERMISSION_DENIED);
2. for a broker, checks the id the request speaks for (every message of a stream);
3. for a user, checks the ACLs the rule names: a stream first what it needs to be opened, then
   every message as the servicer reads it. A refused message ends the stream: the servicer
   answers the messages before it, then the stream ends with PERMISSION_DENIED;
4. for a user, trims from a unary answer what it may not describe.

Wrapped handlers are built once per method and reused, so a call costs the principal look-up (a
cached dictionary read), the rule's checks (ACL answers are cached, acls/core/authorizer.py) and
one comparison per streamed message.

A refusal answers with a message saying what would be allowed, and is logged once per
(principal, method, reason) with the peer's address: a peer retrying in a loop does not flood the
log.
"""

from __future__ import annotations

import logging
import threading
import grpc

from replog.common.acls.enforcement import Enforcer
from replog.common.handler_wrapping import WrappingInterceptor, behaviour_of, rewrapped
from replog.common.security.principal import Principal, peer_principal
from replog.common.security.rules import (
    PERMISSION_DENIED,
    RULES,
    USER,
    Refusal,
    Rule,
    decide,
    decide_speaks_for,
    speaks_for_reader,
)

log = logging.getLogger(__name__)

REFUSALS_LOGGED_MAX = 10_000  # the once-only memory is bounded; past it, refusals are logged again

# Attributes of a handler's behaviour that gRPC's server reads (the health servicer's Watch sets them).


class Authorizer(WrappingInterceptor):
    """Applies `rules` (default: the method table); `enforcer` answers the ACL questions of a server
    that holds ACLs (brokers and gateways). Without one, a user call that needs an ACL is refused."""

    def __init__(self, enforcer: Enforcer | None = None, rules: dict[str, Rule] = RULES) -> None:
        self._enforcer = enforcer
        self._rules = rules
        self._logged: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        super().__init__()

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
        refusal = decide(principal, method, self._rules)
        if refusal is not None:
            self._refuse(context, principal, method, refusal)
        return principal

    def _acl_refusal(self, need, principal: Principal, request) -> Refusal | None:
        if self._enforcer is None:
            message = need.refusal(_NO_ACLS, str(principal), request)
        else:
            message = need.refusal(self._enforcer, str(principal), request)
        return None if message is None else Refusal(PERMISSION_DENIED, "ACL", message)

    # --- wrapping -----------------------------------------------------------------------

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        behaviour = behaviour_of(handler)
        rule = self._rules.get(method)
        if handler.request_streaming:
            guarded = self._guard_stream(method, rule, behaviour, returns_stream=handler.response_streaming)
        else:
            guarded = self._guard_unary(method, rule, behaviour, trims=not handler.response_streaming)
        return rewrapped(handler, guarded)

    def _guard_unary(self, method: str, rule: Rule | None, behaviour, *, trims: bool):
        read_id = speaks_for_reader(method, self._rules)
        need = rule.user if rule is not None else None
        trim = rule.trim if rule is not None and trims else None
        admit, refuse, acl_refusal, enforcer = self._admit, self._refuse, self._acl_refusal, self._enforcer

        def guarded(request, context, *rest):
            principal = admit(context, method)
            if principal.kind == USER:
                refusal = acl_refusal(need, principal, request)
                if refusal is not None:
                    refuse(context, principal, method, refusal)
                response = behaviour(request, context, *rest)
                if trim is not None and enforcer is not None and response is not None:
                    trim(enforcer, str(principal), request, response)
                return response
            if read_id is not None:
                refusal = decide_speaks_for(principal, method, read_id(request))
                if refusal is not None:
                    refuse(context, principal, method, refusal)
            return behaviour(request, context, *rest)

        return guarded

    def _guard_stream(self, method: str, rule: Rule | None, behaviour, *, returns_stream: bool):
        read_id = speaks_for_reader(method, self._rules)
        need = rule.user if rule is not None else None
        to_open = rule.user_to_open if rule is not None else None
        admit, refuse, acl_refusal = self._admit, self._refuse, self._acl_refusal

        def checked(requests, principal: Principal, refused: list[Refusal]):
            """The stream's requests up to the first refused one (its refusal goes into `refused`)."""
            for request in requests:
                if principal.kind == USER:
                    refusal = acl_refusal(need, principal, request)
                elif read_id is not None:
                    refusal = decide_speaks_for(principal, method, read_id(request))
                else:
                    refusal = None
                if refusal is not None:
                    refused.append(refusal)
                    return
                yield request

        def opened(context) -> Principal:
            principal = admit(context, method)
            if principal.kind == USER and to_open is not None:
                refusal = acl_refusal(to_open, principal, None)
                if refusal is not None:
                    refuse(context, principal, method, refusal)
            return principal

        if returns_stream:
            def guarded(requests, context, *rest):
                principal = opened(context)
                refused: list[Refusal] = []
                yield from behaviour(checked(requests, principal, refused), context, *rest)
                if refused:
                    refuse(context, principal, method, refused[0])
        else:
            def guarded(requests, context, *rest):
                principal = opened(context)
                refused: list[Refusal] = []
                response = behaviour(checked(requests, principal, refused), context, *rest)
                if refused:
                    refuse(context, principal, method, refused[0])
                return response

        return guarded


class _NoAcls:
    """The ACL answers of a server that holds no ACLs (a controller): nothing is allowed."""

    class _Nobody:
        @staticmethod
        def may_produce_somewhere(principal: str) -> bool:
            return False

    authorizer = _Nobody()

    @staticmethod
    def refusal(principal: str, operation: str, resource_type: str, names) -> str | None:
        return f"{principal} may not {operation} a {resource_type} here: this server holds no ACLs"

    @staticmethod
    def allows(principal: str, operation: str, resource_type: str, name: str) -> bool:
        return False


_NO_ACLS = _NoAcls()
