"""The pause recorder: every collection is timed into its generation's buckets, and Prometheus reads
them as the `replog_gc_pause_seconds` histogram of the metric table."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry, generate_latest

from replog.common import gc_pauses
from replog.common.metrics import table


class _Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def _collection(recorder: gc_pauses.PauseRecorder, clock: _Clock, generation: int, duration_s: float) -> None:
    recorder.on_collection("start", {"generation": generation})
    clock.now_s += duration_s
    recorder.on_collection("stop", {"generation": generation, "collected": 0, "uncollectable": 0})


def test_each_collection_lands_in_its_generation_and_bucket():
    clock = _Clock()
    recorder = gc_pauses.PauseRecorder((0.001, 0.01, 0.1), clock)
    _collection(recorder, clock, 0, 0.0005)
    recorder.record(0, 0.01)  # on a bound: counted as at most that bound, as Prometheus' `le`
    _collection(recorder, clock, 2, 0.25)
    young, middle, full = recorder.snapshot()
    assert young.bucket_counts == (1, 2, 2, 2) and young.count == 2
    assert abs(young.sum_s - 0.0105) < 1e-9 and young.longest_s == 0.01
    assert middle.count == 0 and middle.bucket_counts == (0, 0, 0, 0)
    assert full.bucket_counts == (0, 0, 0, 1) and full.longest_s == 0.25


def test_a_stop_without_its_start_is_not_counted():
    clock = _Clock()
    recorder = gc_pauses.PauseRecorder((0.001,), clock)
    recorder.on_collection("stop", {"generation": 1})
    assert [p.count for p in recorder.snapshot()] == [0, 0, 0]


def test_real_collections_are_recorded_once_installed_and_not_after():
    recorder = gc_pauses.PauseRecorder(table.GC_PAUSE.buckets)
    recorder.install()
    recorder.install()  # twice is once
    try:
        gc.collect()
        full = recorder.snapshot()[2]
        assert full.count == 1 and full.longest_s > 0
    finally:
        recorder.uninstall()
    gc.collect()
    assert recorder.snapshot()[2].count == 1
    assert recorder.on_collection not in gc.callbacks


def test_the_process_recorder_is_one_and_scrapes_as_the_table_row():
    assert gc_pauses.recorder() is gc_pauses.recorder()
    before = gc_pauses.recorder().snapshot()[2].count
    gc.collect()
    registry = CollectorRegistry()
    registry.register(gc_pauses.PauseCollector(gc_pauses.recorder()))
    text = generate_latest(registry).decode()
    assert "# TYPE replog_gc_pause_seconds histogram" in text
    full_count = [line for line in text.splitlines() if line.startswith('replog_gc_pause_seconds_count{generation="2"}')]
    assert float(full_count[0].split()[-1]) >= before + 1
    assert 'replog_gc_pause_seconds_bucket{generation="0",le="+Inf"}' in text
    assert 'le="0.02"' in text  # the goal's 20 ms is a bucket bound
