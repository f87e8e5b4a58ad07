"""Every user's throttles on this broker, held to the current client quotas.

`replace` takes a new QuotaSnapshot from the QuotaWatcher (replog.common.quotas.store); `admit` and
`record` measure a user's bytes of one kind (PRODUCE or FETCH) against the rate of that kind the
snapshot gives it (`rate`), and answer with the throttle time (core/throttle.py). A user no quota of
that kind applies to is not measured, and with no quota at all (`empty`) nothing is looked up.

The throttles are created as users need them and forgotten when their quota goes (a lifted quota ends
a throttle at once) or, past THROTTLES_MAX of them, once they hold nothing (no bytes in the window, no
throttle running); a changed quota re-times a throttle running. One lock guards them; it is taken only
for users with a quota.
"""

from __future__ import annotations

import logging
import threading

from replog.broker.quotas.core.throttle import Admission, UserThrottle
from replog.broker.runtime.metrics import BrokerMetrics, QuotaKindMetrics
from replog.common.clock import Clock
from replog.common.quotas.core.model import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, QuotaSnapshot

log = logging.getLogger(__name__)

PRODUCE = "produce"  # what Produce and ProduceStream bring in, held to producer_byte_rate
FETCH = "fetch"      # what Fetch sends out, held to consumer_byte_rate
QUOTA_TYPE = {PRODUCE: PRODUCER_BYTE_RATE, FETCH: CONSUMER_BYTE_RATE}
THROTTLES_MAX = 10_000


class ClientQuotas:
    def __init__(self, clock: Clock, metrics: BrokerMetrics, *, samples: int, sample_ms: int) -> None:
        self._clock = clock
        self._samples = samples
        self.sample_ms = sample_ms
        self.snapshot = QuotaSnapshot()  # replaced whole, never changed: read without the lock
        self._throttles: dict[tuple[str, str], UserThrottle] = {}  # (kind, principal) -> its throttle
        self._lock = threading.Lock()
        self._metrics: dict[str, QuotaKindMetrics] = {PRODUCE: metrics.produce_quota, FETCH: metrics.fetch_quota}

    @property
    def empty(self) -> bool:
        """No quota at all: no caller is measured."""
        return self.snapshot.empty

    def replace(self, snapshot: QuotaSnapshot) -> None:
        """New quotas: from the next request on. A user whose quota went is forgotten (its throttle ends);
        one whose quota changed keeps what was measured, and a throttle running is re-timed by the new quota."""
        before, self.snapshot = self.snapshot, snapshot
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            for (kind, principal), throttle in list(self._throttles.items()):
                quota = snapshot.rate(QUOTA_TYPE[kind], principal)
                if quota is None:
                    del self._throttles[(kind, principal)]
                elif quota != before.rate(QUOTA_TYPE[kind], principal):
                    throttle.requota(quota, now_ms)

    def rate(self, kind: str, principal: str) -> int | None:
        """The bytes per second of `kind` `principal` is held to; None when it is not limited."""
        return self.snapshot.rate(QUOTA_TYPE[kind], principal)

    def admit(self, kind: str, principal: str, amount: int, quota: int) -> Admission:
        """Refuse a request of `principal` while it is throttled, else measure its `amount` bytes against
        `quota` (the rate of `kind` that applies to it, `rate`)."""
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            answer = self._throttle(kind, principal, now_ms).admit(amount, quota, now_ms)
        self._observe(kind, answer)
        return answer

    def remaining_ms(self, kind: str, principal: str) -> int:
        """How long `principal` is still throttled in `kind` (0: it is not); counted as a refusal when it is."""
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            throttle = self._throttles.get((kind, principal))
            left = 0 if throttle is None else throttle.remaining_ms(now_ms)
        if left:
            self._observe(kind, Admission(left, True))
        return left

    def record(self, kind: str, principal: str, amount: int) -> int:
        """Measure `amount` bytes already served to `principal`; the throttle they cause (0 for none)."""
        quota = self.rate(kind, principal)
        if quota is None:
            return 0
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            throttle_ms = self._throttle(kind, principal, now_ms).record(amount, quota, now_ms)
        self._observe(kind, Admission(throttle_ms, False))
        return throttle_ms

    def _throttle(self, kind: str, principal: str, now_ms: int) -> UserThrottle:
        """(Under the lock.)"""
        throttle = self._throttles.get((kind, principal))
        if throttle is None:
            if len(self._throttles) >= THROTTLES_MAX:
                for key in [k for k, t in self._throttles.items() if t.forgettable(now_ms)]:
                    del self._throttles[key]
            throttle = self._throttles[(kind, principal)] = UserThrottle(self._samples, self.sample_ms)
        return throttle

    def _observe(self, kind: str, answer: Admission) -> None:
        if answer.throttle_ms:
            metrics = self._metrics[kind]
            metrics.throttled.inc()
            metrics.throttle_seconds.observe(answer.throttle_ms / 1000)
            if answer.refused:
                metrics.refused.inc()
