"""bench/pauses.py: a benchmark's window of collector pauses, from two scrapes of `replog_gc_pause_seconds`
as the services export it."""

from __future__ import annotations

import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from replog.common import gc_pauses

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pauses  # noqa: E402 - bench/ is not a package


def _scrape(recorder: gc_pauses.PauseRecorder) -> dict:
    registry = CollectorRegistry()
    registry.register(gc_pauses.PauseCollector(recorder))
    return pauses.parse_pauses(generate_latest(registry).decode())


def test_the_window_holds_only_the_collections_between_the_scrapes():
    recorder = gc_pauses.PauseRecorder((0.005, 0.02, 0.1))
    recorder.record(2, 0.09)  # before the window: the longest, but not the window's
    recorder.record(0, 0.001)
    before = _scrape(recorder)
    recorder.record(0, 0.003)
    recorder.record(0, 0.015)
    recorder.record(1, 0.5)  # above the last bound
    window = pauses.pauses_between({"broker-1": before}, {"broker-1": _scrape(recorder)})["broker-1"]
    assert window["0"] == {"collections": 2, "total_ms": 18.0, "longest_ms_at_most": 20.0}
    assert window["1"]["collections"] == 1 and window["1"]["longest_ms_at_most"] == float("inf")
    assert window["2"] == {"collections": 0, "total_ms": 0.0, "longest_ms_at_most": None}


def test_a_process_first_scraped_after_the_window_opened_counts_from_zero():
    recorder = gc_pauses.PauseRecorder((0.005, 0.02))
    recorder.record(2, 0.004)
    window = pauses.pauses_between({}, {"gateway-1": _scrape(recorder)})["gateway-1"]
    assert window["2"]["collections"] == 1 and window["2"]["longest_ms_at_most"] == 5.0
