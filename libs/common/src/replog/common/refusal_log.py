"""Refused requests, logged once per (peer, method, reason) per interval, with a count of the rest.

Every refusal a service sends back for a reason its caller caused (a stale or unconfirmed
epoch, a request over a bound, a malformed request) is worth one line: an operator must be
able to see who was refused and why. A caller that repeats the same bad request thousands of
times a second must not fill the disk, though, so only the first refusal of a kind in each
interval is logged; the ones after it are counted, and the count is logged with the next line
of that kind, or when the interval ends and another refusal comes along.

Bounds: at most `kinds_max` kinds are remembered at once. When a flood of distinct kinds (say,
from many connections) fills the table, the refusals of new kinds are counted together as
"other kinds" and reported in one line per interval, so the memory and the log stay bounded.

`peer` is what the transport says of the caller (`context.peer()` for gRPC); it is kept as
given, so the line names the connection that was refused.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

INTERVAL_S = 60.0
KINDS_MAX = 1000
OTHER_KINDS = ("*", "*", "other kinds")


@dataclass
class _Seen:
    logged_s: float
    suppressed: int = 0


class RefusalLog:
    """Logs refusals to `logger` at WARNING, rate-limited per (peer, method, reason)."""

    def __init__(self, logger: logging.Logger, monotonic_s: Callable[[], float], *,
                 interval_s: float = INTERVAL_S, kinds_max: int = KINDS_MAX) -> None:
        assert interval_s > 0 and kinds_max > 0, (interval_s, kinds_max)
        self._logger = logger
        self._monotonic_s = monotonic_s
        self._interval_s = interval_s
        self._kinds_max = kinds_max
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str, str], _Seen] = {}
        self._swept_s = monotonic_s()

    def refused(self, peer: str, method: str, reason: str, detail: str = "") -> None:
        """Note one refusal; `reason` names its kind (an error code), `detail` says what exactly."""
        now = self._monotonic_s()
        with self._lock:
            ended = self._sweep(now)
            key = (peer, method, reason)
            seen = self._seen.get(key)
            if seen is None and len(self._seen) >= self._kinds_max:
                key = OTHER_KINDS
                seen = self._seen.get(key)
            if seen is not None and now - seen.logged_s < self._interval_s:
                seen.suppressed += 1
                line = None
            else:
                earlier = seen.suppressed if seen is not None else 0
                self._seen[key] = _Seen(now)
                line = (key, detail, earlier)
        for peer_, method_, reason_, count in ended:
            self._logger.warning("refused %s from %s: %s, %d more in the last %g s not logged",
                                 method_, peer_, reason_, count, self._interval_s)
        if line is not None:
            (peer_, method_, reason_), detail_, earlier = line
            more = f" ({earlier} more like it since the last such line)" if earlier else ""
            self._logger.warning("refused %s from %s: %s%s%s", method_, peer_, reason_,
                                 f": {detail_}" if detail_ else "", more)

    def _sweep(self, now: float) -> list[tuple[str, str, str, int]]:
        """Forget kinds whose interval ended (at most once an interval); their untold counts."""
        if now - self._swept_s < self._interval_s:
            return []
        self._swept_s = now
        ended = []
        for key, seen in list(self._seen.items()):
            if now - seen.logged_s >= self._interval_s:
                del self._seen[key]
                if seen.suppressed:
                    ended.append((*key, seen.suppressed))
        return ended
