"""Span files written by hand in the services' two formats, with durations chosen by the test."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

MS = 1_000_000
_ids = itertools.count(1)


def ns(ms: float) -> int:
    """Milliseconds since the epoch to integer nanoseconds without float rounding (1.8e18 ns
    is beyond a double's exact integers; 1.8e15 microseconds is not)."""
    return round(ms * 1000) * 1000


def span(trace: int, name: str, start_ms: float, end_ms: float, parent: dict | None = None, *,
         service: str = "replog-controller", instance: str = "1", **attributes) -> dict:
    """A span as replog.common.telemetry.span_to_dict writes it."""
    return {
        "trace_id": f"{trace:032x}", "span_id": f"{next(_ids):016x}",
        "parent_span_id": parent["span_id"] if parent else None, "name": name, "kind": "INTERNAL",
        "start_ns": ns(start_ms), "end_ns": ns(end_ms), "status": "UNSET",
        "attributes": attributes, "events": [], "links": [],
        "resource": {"service.name": service, "service.instance.id": instance},
    }


def write_jsonl(path: Path, spans: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(s, separators=(",", ":")) + "\n" for s in spans))
    return path


def _any_value(value):
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def write_otlp(path: Path, spans: list[dict]) -> Path:
    """The OpenTelemetry Collector file exporter's format: one ExportTraceServiceRequest per line."""
    lines = []
    for s in spans:
        resource = {"attributes": [{"key": k, "value": _any_value(v)} for k, v in s["resource"].items()]}
        otlp_span = {
            "traceId": s["trace_id"], "spanId": s["span_id"], "parentSpanId": s["parent_span_id"] or "",
            "name": s["name"], "kind": 1, "startTimeUnixNano": str(s["start_ns"]), "endTimeUnixNano": str(s["end_ns"]),
            "attributes": [{"key": k, "value": _any_value(v)} for k, v in s["attributes"].items()], "status": {},
        }
        lines.append({"resourceSpans": [{"resource": resource, "scopeSpans": [
            {"scope": {"name": "replog.controller"}, "spans": [otlp_span]}]}]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def broker_failure(trace: int, t0_ms: float, *, partitions: int, decide_ms: float, zookeeper_ms: float,
                   sends: list[tuple[int, float]], broker_spans: list[tuple[int, float, float]],
                   queue_ms: float = 5.0, dead: list[int] | None = None) -> tuple[list[dict], list[dict]]:
    """(controller spans, broker spans) of one broker failure starting at t0_ms.

    ``sends``: (broker id, duration) of LeaderAndIsr requests, back to back after the
    ZooKeeper write; ``broker_spans``: (broker id, start offset, end offset) from t0."""
    root = span(trace, "controller.broker_change", t0_ms, t0_ms, None, **{
        "controller.epoch": 2, "event.queue_time_ms": queue_ms, "controller.noticed_at_ms": int(t0_ms - queue_ms),
        "zookeeper.session_timeout_ms": 6000, "brokers.dead": dead or [3], "brokers.new": [],
        "partitions.affected": partitions, "leader_elections": partitions // 2})
    t = t0_ms
    decide = span(trace, "controller.decide", t, t + decide_ms, root)
    t += decide_ms
    write = span(trace, "controller.zookeeper_write", t, t + zookeeper_ms, root, **{
        "zookeeper.transactions": 2, "zookeeper.ops": partitions, "zookeeper.bytes": partitions * 50})
    t += zookeeper_ms
    send_start = t
    children = []
    for broker, duration in sends:
        children.append(span(trace, "controller.send.LeaderAndIsrRequest", t, t + duration, None,
                             **{"broker.id": broker, "partitions": partitions}))
        t += duration
    send = span(trace, "controller.send_requests", send_start, t, root, brokers=[b for b, _ in sends])
    for child in children:
        child["parent_span_id"] = send["span_id"]
    root["end_ns"] = ns(t)
    brokers = [span(trace, "broker.become_leader", t0_ms + a, t0_ms + b, children[0], service="replog-broker",
                    instance=str(broker), partitions=partitions) for broker, a, b in broker_spans]
    return [root, decide, write, send, *children], brokers
