"""Time comes into the cores from outside, so a simulation can run them on a clock of its own.

Cores receive a `Clock` and never call `time` themselves, so scenario tests and
simulations can drive time by hand with `ManualClock` and replay a schedule.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Reads of wall and monotonic time, in milliseconds."""

    def now_ms(self) -> int:
        """Wall-clock time in milliseconds since the Unix epoch (for timestamps)."""
        ...

    def monotonic_ms(self) -> int:
        """Monotonic time in milliseconds (for timeouts and lag)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; for tests and simulations."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._wall_ms = start_ms
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        return self._wall_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def advance(self, delta_ms: int) -> None:
        assert delta_ms >= 0, "time never goes backwards"
        self._wall_ms += delta_ms
        self._monotonic_ms += delta_ms
