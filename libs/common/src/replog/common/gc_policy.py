"""How the services use CPython's cyclic garbage collector around large, long-lived state.

A full collection scans every tracked object. A broker hosting 10K replicas or a
controller holding 100K partition states has millions, so one full collection
costs tens to hundreds of milliseconds, paid by whichever thread happens to
allocate at that moment. Measured in-process on a broker hosting 3,334
replicas: becoming leader for all of them took 37 us per partition with the
collector running and 15 us with it paused.

- `paused()` around a short burst of allocation (a controller's decide and
  apply, a broker applying a LeaderAndIsr): nothing is scanned mid-burst; the
  next collection sees the burst's survivors, and any cycles it left, once.
- `paused(freeze=True)` around a large burst of long-lived state that comes
  rarely (a broker applying a LeaderAndIsr for thousands of partitions): when
  the block ends, everything then tracked is frozen without a collection. A
  block that learns only inside how large its burst is (a controller event,
  once decided) calls `freeze_on_exit()` on the pause it was given.
  Otherwise the next young collection scans the whole burst and a full one
  soon follows: after a 10K-partition failover's requests that was 60-160 ms
  of a broker's GIL (a gen-0 collection) and 60-70 ms more (a full one), in the
  middle of the replication the clients wait for. The price: a reference cycle
  already garbage at that moment is never collected, so only large bursts
  freeze (they come with failovers and topic changes, not with traffic).
- `settle()` after building state that lives as long as the process or the
  controller seat (the loaded snapshot, replicas created by a LeaderAndIsr):
  one full collection, then every surviving object moves to the permanent
  generation (`gc.freeze`), and later collections scan only what came after.
  An object frozen and later dropped is still freed by reference counting; only
  a reference cycle among frozen objects would stay, which is why the full
  collection comes first.
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
