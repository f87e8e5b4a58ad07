"""A user's byte rate over a sliding window of samples, and the throttle time that brings it back to a quota
(Kafka's sampled Rate and quota throttle, KIP-13, in replog's words). Pure: time comes in as arguments.

The window is `samples` samples of `sample_ms` each. A sample starts when a byte arrives after the
current sample's time is up, and is forgotten once it started `samples * sample_ms` ago, so the
window slides a sample at a time and a burst is forgotten within one window's length.

The rate is the bytes of the samples kept over the time they span, and never over less than
`samples - 1` whole samples: a user idle until now is treated as idle over that span, not as one
that sent its first request's bytes in no time at all. So the first requests of a quiet user pass
unthrottled until they exceed what the quota allows over that span.

The throttle time is how long the user must then send nothing for the rate to fall back to the
quota, the span growing as it waits: `bytes * 1000 / quota - span_ms`. Kafka caps it at the window's
length; replog does not (but for THROTTLE_MS_MAX, which only a tiny quota and a large request reach):
with the cap, a client whose requests each come near what the quota allows over the window was let
through at about 1.4 times its quota, since the window forgets a request before its wait would have
paid for it. Without it, the law tests/unit/broker/quotas/test_rate.py checks holds: a client whose
requests are each at most a tenth of what the quota allows over the window is held to the quota,
whatever its timing, over any stretch of time but for one window's worth and one request.
"""

from __future__ import annotations

import collections
import math

THROTTLE_MS_MAX = 3_600_000  # an hour; far within the answers' int32


class SampledRate:
    def __init__(self, samples: int, sample_ms: int) -> None:
        assert samples >= 2 and sample_ms >= 1, "a window of at least two samples of at least 1 ms"
        self.samples = samples
        self.sample_ms = sample_ms
        self.window_max_ms = samples * sample_ms
        self._samples: collections.deque[list[int]] = collections.deque()  # [start ms, bytes], oldest first
        self._total = 0

    def record(self, amount: int, now_ms: int) -> None:
        self._forget(now_ms)
        current = self._samples[-1] if self._samples else None
        if current is None or now_ms - current[0] >= self.sample_ms:
            if len(self._samples) == self.samples:
                self._total -= self._samples.popleft()[1]
            current = [now_ms, 0]
            self._samples.append(current)
        current[1] += amount
        self._total += amount

    def total(self, now_ms: int) -> int:
        """The bytes the window holds at `now_ms`."""
        self._forget(now_ms)
        return self._total

    def span_ms(self, now_ms: int) -> int:
        """The time the rate is measured over: since the oldest sample kept, at least `samples - 1` samples."""
        self._forget(now_ms)
        oldest = self._samples[0][0] if self._samples else now_ms
        return max(now_ms - oldest, (self.samples - 1) * self.sample_ms)

    def rate(self, now_ms: int) -> float:
        """Bytes per second at `now_ms`."""
        return self.total(now_ms) * 1000 / self.span_ms(now_ms)

    def throttle_ms(self, quota: int, now_ms: int) -> int:
        """How long no more bytes must come for the rate to be back at `quota` bytes per second (0: it is)."""
        owed_ms = self.total(now_ms) * 1000 / quota - self.span_ms(now_ms)
        return 0 if owed_ms <= 0 else min(math.ceil(owed_ms), THROTTLE_MS_MAX)

    def idle(self, now_ms: int) -> bool:
        """Whether the window holds nothing any more."""
        self._forget(now_ms)
        return not self._samples

    def _forget(self, now_ms: int) -> None:
        samples = self._samples
        while samples and now_ms - samples[0][0] >= self.window_max_ms:
            self._total -= samples.popleft()[1]
