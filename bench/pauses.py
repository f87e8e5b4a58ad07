"""The garbage collector's pauses of a benchmark's window, from every service's `replog_gc_pause_seconds`.

`scrape_pauses` reads the histograms of every process of a local cluster; `pauses_between` turns two
readings into the window's collections per process and generation. A histogram keeps buckets, not
values: the window's longest collection is known as the upper bound of the highest bucket that
gained one (`longest_ms_at_most`).
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from replog.common.metrics import table


def scrape_pauses(cluster) -> dict[str, dict[str, dict]]:
    """process -> generation -> {"buckets": {le: cumulative count}, "count", "sum_s"} from every service's /metrics."""
    found = {}
    for process in cluster.processes.values():
        if not getattr(process, "metrics_port", None):
            continue  # ZooKeeper
        text = urllib.request.urlopen(f"http://{process.host}:{process.metrics_port}/metrics", timeout=30).read()
        found[process.name] = parse_pauses(text.decode())
    return found


def parse_pauses(text: str) -> dict[str, dict]:
    """generation -> {"buckets": {le: cumulative count}, "count", "sum_s"} from one Prometheus text scrape."""
    name = table.GC_PAUSE.name
    by_generation: dict[str, dict] = {}
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            entry = by_generation.setdefault(sample.labels["generation"], {"buckets": {}, "count": 0, "sum_s": 0.0})
            if sample.name == name + "_bucket":
                entry["buckets"][float(sample.labels["le"])] = sample.value
            elif sample.name == name + "_count":
                entry["count"] = sample.value
            elif sample.name == name + "_sum":
                entry["sum_s"] = sample.value
    return by_generation


def pauses_between(before: dict, after: dict) -> dict[str, dict[str, dict]]:
    """Per process and generation: the collections between two scrapes, their total, and the upper bound
    of the highest bucket that gained one (inf: above the last bound; None: no collection)."""
    window = {}
    for process, generations in after.items():
        window[process] = {}
        for generation, entry in sorted(generations.items()):
            earlier = before.get(process, {}).get(generation, {"buckets": {}, "count": 0, "sum_s": 0.0})
            collections = int(entry["count"] - earlier["count"])
            longest = _highest_gaining_bound(entry["buckets"], earlier["buckets"]) if collections else None
            window[process][generation] = {
                "collections": collections,
                "total_ms": round((entry["sum_s"] - earlier["sum_s"]) * 1000, 1),
                "longest_ms_at_most": None if longest is None else longest * 1000,
            }
    return window


def _highest_gaining_bound(after: dict[float, float], before: dict[float, float]) -> float:
    """The upper bound of the highest bucket whose own (non-cumulative) count grew between two readings."""
    bounds = sorted(after)
    highest = bounds[0]
    below_after = below_before = 0.0
    for le in bounds:
        own_after, own_before = after[le] - below_after, before.get(le, 0.0) - below_before
        if own_after > own_before:
            highest = le
        below_after, below_before = after[le], before.get(le, 0.0)
    return highest
