"""Two opt-in views of a running broker for measuring it, off unless their variable is set:

- `REPLOG_PROFILE_STARTUP=<file>`: the broker's start (loading the logs up to registering in ZooKeeper)
  runs under cProfile and its statistics are written to <file> (pstats format: `python -m pstats <file>`);
  `{pid}` in <file> is replaced by the process id, so that every start keeps its own.
- `REPLOG_HEAP_REPORT=<file>`: on SIGUSR2 the broker writes (replaces) <file> with the live objects the garbage
  collector tracks counted by type (count, sum of sys.getsizeof) and, if tracemalloc traces (start the
  broker with PYTHONTRACEMALLOC=1), the source lines that allocated most of what is live.

Neither touches a request path; the report runs in the main thread, which only waits for a stop.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from collections import Counter
from contextlib import contextmanager
from typing import Iterator

PROFILE_STARTUP_ENV = "REPLOG_PROFILE_STARTUP"
HEAP_REPORT_ENV = "REPLOG_HEAP_REPORT"
TYPES_SHOWN = 40
LINES_SHOWN = 40


@contextmanager
def profiled_startup() -> Iterator[None]:
    path = os.environ.get(PROFILE_STARTUP_ENV)
    if not path:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(path.replace("{pid}", str(os.getpid())))


def heap_report() -> str:
    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    frozen = gc.get_freeze_count()
    if frozen:  # frozen objects (gc_policy.settle) are not listed: thaw them for the count, then freeze all again
        gc.unfreeze()
    try:
        objects = gc.get_objects()
    finally:
        if frozen:
            gc.freeze()
    for obj in objects:
        name = type(obj).__qualname__
        counts[name] += 1
        sizes[name] += sys.getsizeof(obj)
    del objects
    lines = [f"heap report at {time.strftime('%H:%M:%S')}: {sum(counts.values())} objects tracked by the collector "
             f"({frozen} of them were frozen)",
             f"{'type':<48} {'count':>10} {'bytes (getsizeof)':>18}"]
    lines += [f"{name:<48} {counts[name]:>10} {size:>18}" for name, size in sizes.most_common(TYPES_SHOWN)]
    import tracemalloc

    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        stats = snapshot.statistics("lineno")
        lines.append(f"tracemalloc: {sum(s.size for s in stats)} bytes live in {sum(s.count for s in stats)} blocks")
        lines += [f"{s.size:>12} {s.count:>9} {s.traceback}" for s in stats[:LINES_SHOWN]]
    return "\n".join(lines) + "\n"


def install_heap_report() -> None:
    path = os.environ.get(HEAP_REPORT_ENV)
    if not path:
        return

    def write(signum, frame) -> None:
        text = heap_report()
        with open(path + ".partial", "w") as out:  # renamed when whole: a reader sees all of it or nothing
            out.write(text)
        os.replace(path + ".partial", path)

    signal.signal(signal.SIGUSR2, write)
