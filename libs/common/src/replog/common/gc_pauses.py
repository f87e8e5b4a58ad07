"""How long the cyclic garbage collector stops the process: every collection's duration, by generation.

A collection holds the interpreter lock from start to end, so its duration is a pause of every
thread of the process: of the broker's appends and answers, of the controller's loop. CPython
calls each function in `gc.callbacks` with "start" before a collection and "stop" after it;
`PauseRecorder` times the two and counts the duration into fixed buckets per generation.

Why counting by hand, and not a prometheus_client Histogram observed in the callback: the
callback runs on whichever thread allocated when the collector ran, in the middle of its code;
that thread may be inside prometheus_client holding one of its (non-reentrant) locks, and
observing would then deadlock it. Here the callback only adds to lists no other code writes
(collections never overlap: CPython runs one at a time), and `PauseCollector` reads them when
Prometheus scrapes, as `replog_gc_pause_seconds{generation}`.

One recorder per process (`recorder()`, installed on first use, never at import): the collector
is the process's, whatever registry or service asks for it.
"""

from __future__ import annotations

import bisect
import gc
import threading
import time
from dataclasses import dataclass

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

from replog.common.metrics import table

GENERATIONS = (0, 1, 2)


@dataclass(frozen=True)
class GenerationPauses:
    """One generation's collections so far: cumulative counts per bucket bound (the last is +Inf),
    their total and the longest."""

    generation: int
    bucket_counts: tuple[int, ...]  # cumulative, one per bound of `PauseRecorder.bounds_s` plus +Inf
    count: int
    sum_s: float
    longest_s: float


class PauseRecorder:
    """Times collections from `gc.callbacks`; `install()` adds it, `uninstall()` takes it out."""

    def __init__(self, bounds_s: tuple[float, ...], clock=time.perf_counter) -> None:
        assert list(bounds_s) == sorted(bounds_s) and len(set(bounds_s)) == len(bounds_s), bounds_s
        self.bounds_s = tuple(bounds_s)
        self._clock = clock
        # Per generation, collections per bucket (not cumulative; index len(bounds) is +Inf).
        self._counts = [[0] * (len(bounds_s) + 1) for _ in GENERATIONS]
        self._sums_s = [0.0 for _ in GENERATIONS]
        self._longest_s = [0.0 for _ in GENERATIONS]
        self._started: float | None = None

    def install(self) -> None:
        if self.on_collection not in gc.callbacks:
            gc.callbacks.append(self.on_collection)

    def uninstall(self) -> None:
        while self.on_collection in gc.callbacks:
            gc.callbacks.remove(self.on_collection)

    def on_collection(self, phase: str, info: dict) -> None:
        """The gc.callbacks hook: nothing here takes a lock or calls out (see the module docstring)."""
        if phase == "start":
            self._started = self._clock()
            return
        started, self._started = self._started, None
        if started is None:  # installed in the middle of a collection
            return
        self.record(info["generation"], self._clock() - started)

    def record(self, generation: int, duration_s: float) -> None:
        # A bound is the bucket's inclusive upper end (Prometheus' `le`).
        self._counts[generation][bisect.bisect_left(self.bounds_s, duration_s)] += 1
        self._sums_s[generation] += duration_s
        if duration_s > self._longest_s[generation]:
            self._longest_s[generation] = duration_s

    def snapshot(self) -> list[GenerationPauses]:
        found = []
        for generation in GENERATIONS:
            counts = list(self._counts[generation])  # one copy: a collection during the read changes no sum
            cumulative, total = [], 0
            for count in counts:
                total += count
                cumulative.append(total)
            found.append(GenerationPauses(generation, tuple(cumulative), total, self._sums_s[generation],
                                          self._longest_s[generation]))
        return found


class PauseCollector(Collector):
    """Exports a recorder as the `replog_gc_pause_seconds` histogram, one series per generation."""

    def __init__(self, pauses: PauseRecorder) -> None:
        self._pauses = pauses

    def collect(self):
        metric = table.GC_PAUSE
        family = HistogramMetricFamily(metric.base_name, metric.help, labels=list(metric.labels))
        bounds = [*(_bound(b) for b in self._pauses.bounds_s), "+Inf"]
        for pauses in self._pauses.snapshot():
            family.add_metric([str(pauses.generation)], list(zip(bounds, pauses.bucket_counts)), pauses.sum_s)
        yield family


def _bound(seconds: float) -> str:
    return repr(float(seconds))


_lock = threading.Lock()
_recorder: PauseRecorder | None = None


def recorder() -> PauseRecorder:
    """This process's recorder, installed in gc.callbacks on the first call."""
    global _recorder
    with _lock:
        if _recorder is None:
            _recorder = PauseRecorder(table.GC_PAUSE.buckets)
            _recorder.install()
        return _recorder
