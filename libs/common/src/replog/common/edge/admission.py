"""How many calls each identity may hold open on a server at once, so no caller starves the others.

Theory of operation. A gRPC server here is synchronous: every call holds one of the server's
handler threads until it ends, a stream for its whole life (a health watch excepted: it is answered
without a thread). Without a bound per caller, one identity opening enough idle streams or parking
enough long-polls takes every thread, and everyone else's calls wait in gRPC's queue until their
deadlines pass. So each call is admitted here, after its caller was authorized (nothing is taken for
a call that is refused anyway), and given back when it ends:

- each principal may hold `principal_calls_max` calls at once (unary calls in progress and open
  streams, health watches apart); over it, RESOURCE_EXHAUSTED;
- users together may hold `users_calls_max`, so the rest of the threads stay for the cluster's own
  traffic (replication, the controller's requests) whatever number of users call. Super users (the
  operators) are not admitted here at all (edge/guard.py): an operator still gets a thread when users
  fill theirs, and is trusted with the server as with the cluster;
- each principal may hold `principal_watches_max` health watches (no thread each, but memory).

Counts are kept per principal only while it holds something, so the table's size is bounded by the
calls open. A plaintext server has no identities, hence no per-identity limits (docs/security.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

CALL = "call"
WATCH = "watch"


@dataclass(frozen=True)
class Limits:
    principal_calls_max: int
    users_calls_max: int
    principal_watches_max: int

    def __post_init__(self) -> None:
        assert self.principal_calls_max > 0 and self.users_calls_max > 0 and self.principal_watches_max > 0, self


def limits_for_threads(handler_threads: int, *, principal_calls_max: int = 0,
                       principal_watches_max: int = 256) -> Limits:
    """The limits of a server with `handler_threads`: a principal takes at most a quarter of them (or
    `principal_calls_max` when set), users together three quarters."""
    quarter = max(handler_threads // 4, 1)
    return Limits(principal_calls_max=principal_calls_max or quarter,
                  users_calls_max=max(handler_threads - quarter, 1),
                  principal_watches_max=principal_watches_max)


class Admission:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], int] = {}  # (principal, CALL or WATCH) -> held now
        self._users_calls = 0

    def enter(self, principal: str, kind: str, *, counts_as_user: bool) -> str | None:
        """Take one `kind` for `principal`; None when admitted, else why not (for RESOURCE_EXHAUSTED).
        `counts_as_user`: the call counts toward the users' shared bound (a user that is no super user)."""
        limits = self.limits
        limit = limits.principal_calls_max if kind == CALL else limits.principal_watches_max
        key = (principal, kind)
        with self._lock:
            held = self._held.get(key, 0)
            if held >= limit:
                what = "calls in progress and open streams" if kind == CALL else "health watches"
                return (f"{principal} already holds {held} {what} on this server, the most one identity may "
                        f"(principal_{'calls' if kind == CALL else 'watches'}_max); end some, or retry later")
            shared = counts_as_user and kind == CALL
            if shared and self._users_calls >= limits.users_calls_max:
                return (f"users hold {self._users_calls} calls on this server, the most they may together "
                        "(the rest serve the cluster's own traffic); retry later")
            self._held[key] = held + 1
            if shared:
                self._users_calls += 1
        return None

    def leave(self, principal: str, kind: str, *, counts_as_user: bool) -> None:
        key = (principal, kind)
        with self._lock:
            held = self._held.get(key, 0)
            assert held > 0, (principal, kind)
            if held == 1:
                del self._held[key]
            else:
                self._held[key] = held - 1
            if counts_as_user and kind == CALL:
                self._users_calls -= 1

    def held(self, principal: str, kind: str = CALL) -> int:
        with self._lock:
            return self._held.get((principal, kind), 0)

    @property
    def principals(self) -> int:
        with self._lock:
            return len({principal for principal, _ in self._held})
