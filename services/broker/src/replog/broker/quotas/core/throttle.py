"""One user's quota of one type on this broker: admit or refuse a request, and the throttle time to answer
with (KIP-219's order, in replog's words). Pure: time and the quota come in as arguments.

A request is measured when it is admitted. When that puts the user over its quota, the answer leaves at
once with the throttle time (rate.py), and the user is *throttled* until that time has passed: a
cooperative client waits it out before its next request to this broker. A request that arrives while
its user is throttled is turned away before anything is done and is not measured; its answer carries
the throttle time left. So a client that ignores the throttle gains nothing by it: what it sends while
throttled is refused, and what is admitted is what a client that waited would have had admitted.
A quota changed while its user is throttled re-times the throttle by the new quota (`requota`).
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.broker.quotas.core.rate import SampledRate


@dataclass(frozen=True)
class Admission:
    throttle_ms: int  # for the answer: the throttle this request caused, or the time left if refused
    refused: bool     # it arrived while the user was throttled: not measured, nothing done


class UserThrottle:
    def __init__(self, samples: int, sample_ms: int) -> None:
        self.rate = SampledRate(samples, sample_ms)
        self.throttled_until_ms = 0

    def remaining_ms(self, now_ms: int) -> int:
        """How long the user is still throttled (0: it is not)."""
        return max(0, self.throttled_until_ms - now_ms)

    def admit(self, amount: int, quota: int, now_ms: int) -> Admission:
        """Refuse a request while throttled; else measure its `amount` and say what throttle it causes."""
        left = self.remaining_ms(now_ms)
        if left:
            return Admission(left, True)
        return Admission(self.record(amount, quota, now_ms), False)

    def record(self, amount: int, quota: int, now_ms: int) -> int:
        """Measure `amount` (a request already served) and return the throttle it causes, 0 for none."""
        self.rate.record(amount, now_ms)
        throttle = self.rate.throttle_ms(quota, now_ms)
        if throttle:
            self.throttled_until_ms = max(self.throttled_until_ms, now_ms + throttle)
        return throttle

    def requota(self, quota: int, now_ms: int) -> None:
        """The quota changed: a throttle running is what the bytes measured owe at the new quota (a raised
        quota shortens it, or ends it at once)."""
        if self.remaining_ms(now_ms):
            self.throttled_until_ms = now_ms + self.rate.throttle_ms(quota, now_ms)

    def forgettable(self, now_ms: int) -> bool:
        """Whether nothing is left to remember: no bytes in the window and no throttle running."""
        return not self.remaining_ms(now_ms) and self.rate.idle(now_ms)
