"""ACL checks at the gRPC edge: who calls, may they, and the refusal when not.

`caller_of` is the one adapter over the TLS layer's identity (replog.common.security.principal):
a certificate naming a controller, broker or gateway is a service, which topic ACLs do not
govern; one naming a user is `User:<name>`; a call with no certificate is `User:ANONYMOUS`, as in
Kafka, and gets only what the ACLs grant that name.

A refusal answers PERMISSION_DENIED naming the principal, the operation and the resource, before
the handler changes anything, and is logged once per (principal, operation, resource) so a client
retrying in a loop does not flood the log. The once-only memory is bounded (past
REFUSALS_LOGGED_MAX it forgets, and logs again). With enforcement off (a service running without
TLS has no identities to check) every call is allowed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

import grpc

from replog.common.acls.core.authorizer import Authorizer
from replog.common.security.principal import SERVICE_KINDS, peer_principal

log = logging.getLogger(__name__)

ANONYMOUS = "User:ANONYMOUS"
REFUSALS_LOGGED_MAX = 10_000


@dataclass(frozen=True)
class Caller:
    principal: str      # "User:alice"; a service's own name ("broker:2") for logs
    is_service: bool    # controllers, brokers and gateways are not subject to ACLs


def caller_of(context) -> Caller:
    """Who is calling, from the TLS layer's view of the peer's certificate."""
    principal = peer_principal(context)
    if principal is None:
        return Caller(ANONYMOUS, False)
    return Caller(str(principal), principal.kind in SERVICE_KINDS)


class Enforcer:
    def __init__(self, authorizer: Authorizer, *, enabled: bool,
                 caller: Callable[[object], Caller] = caller_of) -> None:
        self.authorizer = authorizer
        self.enabled = enabled
        self._caller = caller
        self._logged: set[tuple[str, str, str, str]] = set()
        self._lock = threading.Lock()

    def caller(self, context) -> Caller | None:
        """The caller the ACLs govern; None when they do not (enforcement off, or a service)."""
        if not self.enabled:
            return None
        caller = self._caller(context)
        return None if caller.is_service else caller

    def refusal(self, caller: Caller | None, operation: str, resource_type: str,
                names: Iterable[str]) -> str | None:
        """The refusal message for the first name `caller` may not `operation`, or None when all are allowed."""
        if caller is None:
            return None
        for name in names:
            if not self.authorizer.authorize(caller.principal, operation, resource_type, name):
                self._log_once(caller.principal, operation, resource_type, name)
                return refusal_message(caller.principal, operation, resource_type, name)
        return None

    def check(self, context, operation: str, resource_type: str, names: Iterable[str]) -> None:
        """Abort the call with PERMISSION_DENIED unless the caller may `operation` every one of `names`."""
        message = self.refusal(self.caller(context), operation, resource_type, names)
        if message is not None:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, message)

    def allows(self, caller: Caller | None, operation: str, resource_type: str, name: str) -> bool:
        """For filtering what a listing shows: no log, no refusal."""
        return caller is None or self.authorizer.authorize(caller.principal, operation, resource_type, name)

    def _log_once(self, principal: str, operation: str, resource_type: str, name: str) -> None:
        key = (principal, operation, resource_type, name)
        with self._lock:
            if key in self._logged:
                return
            if len(self._logged) >= REFUSALS_LOGGED_MAX:
                self._logged.clear()
            self._logged.add(key)
        log.warning("ACL refused: %s may not %s %s '%s' (logged once per principal, operation and resource)",
                    principal, operation, resource_type, name)


def refusal_message(principal: str, operation: str, resource_type: str, name: str) -> str:
    target = f"{resource_type} '{name}'"
    hint = f"--{resource_type} {name}" if resource_type in ("topic", "group") else "--cluster"
    return (f"{principal} is not authorized to {operation} on {target}: no ACL allows it, or one denies it; "
            f"nothing was done (an operator can grant it: replog acls add --allow-principal {principal} "
            f"--operation {operation} {hint})")
