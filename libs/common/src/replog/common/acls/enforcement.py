"""ACL decisions at the gRPC edge: may this user do this to these resources, and the refusal when not.

The authorization interceptor (security/authorization.py) asks an `Enforcer` for each user call
the method table (security/rules.py) says needs an ACL. Only users are asked about: a service
identity (controller, broker, gateway) has the rights of its role, which the method table grants
or refuses by kind, and no ACL can widen them; a call without an identity never gets this far
(a plaintext cluster has neither identities nor ACLs).

A refusal message names the principal, the operation and the resource, and how an operator would
grant it; it is logged once per (principal, operation, resource) so a client retrying in a loop
does not flood the log. The once-only memory is bounded (past REFUSALS_LOGGED_MAX it forgets, and
logs again).
"""

from __future__ import annotations

import logging
import threading
from typing import Iterable

from replog.common.acls.core.authorizer import Authorizer

log = logging.getLogger(__name__)

REFUSALS_LOGGED_MAX = 10_000


class Enforcer:
    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer
        self._logged: set[tuple[str, str, str, str]] = set()
        self._lock = threading.Lock()

    def refusal(self, principal: str, operation: str, resource_type: str, names: Iterable[str]) -> str | None:
        """The refusal message for the first name `principal` may not `operation`, or None when all are allowed."""
        authorize = self.authorizer.authorize
        for name in names:
            if not authorize(principal, operation, resource_type, name):
                self._log_once(principal, operation, resource_type, name)
                return refusal_message(principal, operation, resource_type, name)
        return None

    def allows(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        """For filtering what an answer shows: no log, no refusal."""
        return self.authorizer.authorize(principal, operation, resource_type, name)

    def _log_once(self, principal: str, operation: str, resource_type: str, name: str) -> None:
        key = (principal, operation, resource_type, name)
        with self._lock:
            if key in self._logged:
                return
            if len(self._logged) >= REFUSALS_LOGGED_MAX:
                self._logged.clear()
            self._logged.add(key)
        log.warning("ACL refused: %s may not %s %s '%s' (logged once per principal, operation and resource)",
                    principal, operation, resource_type, name[:300])


def refusal_message(principal: str, operation: str, resource_type: str, name: str) -> str:
    shown = name if len(name) <= 300 else name[:300] + "..."
    target = f"{resource_type} '{shown}'"
    hint = f"--{resource_type} {shown}" if resource_type in ("topic", "group") else "--cluster"
    return (f"{principal} is not authorized to {operation} on {target}: no ACL allows it, or one denies it; "
            f"nothing was done (an operator can grant it: replog acls add --allow-principal {principal} "
            f"--operation {operation} {hint})")
