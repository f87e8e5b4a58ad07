"""How the services use CPython's cyclic garbage collector around large, long-lived state.

A full collection scans every tracked object, and a broker with 10K replicas or a controller
with 100K partition states has millions: tens to hundreds of milliseconds, charged to
whichever thread allocates next, in the middle of a failover. So:

- `paused()` around a burst of allocation (a controller event, a broker applying a
  LeaderAndIsr): nothing is scanned mid-burst; the next collection sees the burst's
  survivors, and any cycles it left, once.
- `paused(freeze=True)`, or `freeze_on_exit()` on the pause once the block knows its size,
  around a large burst of long-lived state that comes rarely: when the block ends,
  everything then tracked is frozen without a collection, so no later collection scans
  it. A reference cycle already garbage at that moment is never collected, which is why
  only large bursts (failovers, topic changes, not traffic) freeze.
- `settle()` after building state that lives as long as the process or the controller
  seat: one full collection, then every survivor is frozen (`gc.freeze`). An object frozen
  and later dropped is still freed by reference counting; the collection first means no
  cycle among frozen objects is kept.

The measurements: docs/perf/gc-freeze.md.
"""

from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager
from typing import Iterator

_pause_lock = threading.Lock()
_pauses = 0


class Pause:
    """One open `paused()` block: whether what it leaves is frozen when it ends."""

    __slots__ = ("freeze",)

    def __init__(self, freeze: bool) -> None:
        self.freeze = freeze

    def freeze_on_exit(self) -> None:
        self.freeze = True


@contextmanager
def paused(*, freeze: bool = False) -> Iterator[Pause]:
    """The collector does not run inside the block (nested and concurrent blocks are fine);
    with `freeze` (or `freeze_on_exit()` called on the pause it yields), what the block left
    is frozen when it ends (see the module docstring)."""
    global _pauses
    pause = Pause(freeze)
    with _pause_lock:
        _pauses += 1
        gc.disable()
    try:
        yield pause
    finally:
        with _pause_lock:
            if pause.freeze:
                gc.freeze()
            _pauses -= 1
            if _pauses == 0:
                gc.enable()


def settle() -> float:
    """Collect once, then keep every surviving object out of later collections; returns seconds taken."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    return time.perf_counter() - started
