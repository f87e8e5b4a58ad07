"""The edge's configuration keys every service shares (their one owner): limits per identity and on
idle streams. Each service's config dataclass inherits `EdgeSettings`."""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.config import non_negative, positive, setting
from replog.common.edge.admission import Limits, limits_for_threads


@dataclass(frozen=True)
class EdgeSettings:
    principal_calls_max: int = setting(
        0, "calls one identity may hold on this server at once (unary calls in progress and open streams; "
           "health watches apart); more are refused with RESOURCE_EXHAUSTED. 0: a quarter of the server's "
           "handler threads. Users together hold at most three quarters; super users are not limited (TLS "
           "only: a plaintext server has no identities)", non_negative)
    principal_watches_max: int = setting(
        256, "health watches one identity may hold on this server at once (every client channel keeps one)",
        positive)
    stream_idle_ms_max: int = setting(
        120_000, "a request stream whose caller sends nothing for this long is ended (CANCELLED): it holds a "
                 "handler thread while it waits", positive)

    def edge_limits(self, handler_threads: int) -> Limits:
        return limits_for_threads(handler_threads, principal_calls_max=self.principal_calls_max,
                                  principal_watches_max=self.principal_watches_max)
