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

- `configure()`, once per process before the service starts (service.run): the collector's
  settings for a long-running service, chosen by REPLOG_GC (this module owns it). `default`:
  CPython's own. `tuned`: every full collection the collector runs by itself ends with a freeze
  of its survivors, so the next full collection scans only what survived since, not the whole heap
  again (the same trade as `settle()`: the survivors' later cycles are never collected). It cut
  full collections of a 10,000-partition broker from up to 200 ms to 75 ms without moving the
  latency tail, and no run of hours has shown what the cycles it keeps cost: opt-in until one has.

The measurements: docs/perf/gc-freeze.md, docs/perf/scale.md.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Iterator

from replog.common.config import ConfigError

ENV = "REPLOG_GC"
CHOICES = ("default", "tuned")
DEFAULT = "default"

log = logging.getLogger(__name__)

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


def choice(environ: Mapping[str, str] = os.environ) -> str:
    """The settings asked for: the environment's value, else the default (ConfigError if unknown)."""
    value = environ.get(ENV, DEFAULT).strip().lower() or DEFAULT
    if value not in CHOICES:
        raise ConfigError(f"{ENV}={environ[ENV]!r}: must be one of {', '.join(CHOICES)}")
    return value


def configure(environ: Mapping[str, str] = os.environ) -> str:
    """Apply the chosen settings to this process (once, before the service starts); returns the choice."""
    wanted = choice(environ)
    if wanted == "tuned" and _freeze_after_full_collection not in gc.callbacks:
        gc.callbacks.append(_freeze_after_full_collection)
    return wanted


def unconfigure() -> None:
    """Back to CPython's own settings (tests)."""
    while _freeze_after_full_collection in gc.callbacks:
        gc.callbacks.remove(_freeze_after_full_collection)


def _freeze_after_full_collection(phase: str, info: dict) -> None:
    """A gc.callbacks hook: when a full collection ends, what survived it is frozen. Garbage cycles were
    just collected, so only live objects are frozen; the young generations are empty at that moment."""
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()
