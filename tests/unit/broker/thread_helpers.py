"""Helpers for the broker tests whose threads finish their work a moment later."""

from __future__ import annotations

import time


def wait_for(condition, what: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
