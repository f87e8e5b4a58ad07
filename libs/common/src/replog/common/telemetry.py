"""Tracing and metrics bootstrap (docs/metrics.md lists the metrics).

Tracing: an OpenTelemetry TracerProvider with `service.name` and
`service.instance.id`. Spans go to JSON-lines files in the trace directory (one
file per process), which `replog trace` and the Spark failover job read, and
also to OTLP over gRPC when OTEL_EXPORTER_OTLP_ENDPOINT is set (Jaeger, Tempo, a
Collector): both at once, so a cluster sending its traces to a collector keeps
the files its own tools read. An empty trace directory writes no files. The W3C
trace context travels in gRPC metadata through `inject_metadata` /
`extract_context`; replog.common.rpc_spans makes the spans of the calls.

Metrics: prometheus_client's registry, served on the process's /metrics port.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Sequence

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesSpanExporter(SpanExporter):
    """Writes each finished span as one JSON object per line."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = [json.dumps(span_to_dict(span), separators=(",", ":")) for span in spans]
        with self._lock:
            self._file.write("\n".join(lines) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._file.close()


def span_to_dict(span: ReadableSpan) -> dict:
    ctx = span.get_span_context()
    parent = span.parent
    return {
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_span_id": format(parent.span_id, "016x") if parent else None,
        "name": span.name,
        "kind": span.kind.name,
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
        "events": [
            {"name": e.name, "time_ns": e.timestamp, "attributes": dict(e.attributes or {})} for e in span.events
        ],
        "links": [
            {"trace_id": format(l.context.trace_id, "032x"), "span_id": format(l.context.span_id, "016x")}
            for l in span.links
        ],
        "resource": dict(span.resource.attributes),
    }


def init_tracing(service: str, instance: str, trace_dir: str) -> TracerProvider:
    resource = Resource.create({"service.name": service, "service.instance.id": instance})
    provider = TracerProvider(resource=resource)
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if trace_dir:
        path = Path(trace_dir) / f"{service}-{instance}.jsonl"
        provider.add_span_processor(BatchSpanProcessor(JsonLinesSpanExporter(path), schedule_delay_millis=500))
    trace.set_tracer_provider(provider)
    return provider


def mark_failed(span: trace.Span, error_type: str, description: str) -> None:
    """Say in OpenTelemetry's terms that `span`'s operation failed: status ERROR with `description`, and
    `error.type` naming the kind of failure (an error code's or exception's name), which trace UIs show."""
    span.set_attribute("error.type", error_type)
    span.set_status(trace.Status(trace.StatusCode.ERROR, description))


def inject_metadata() -> list[tuple[str, str]]:
    """The current trace context as gRPC metadata (W3C traceparent)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return list(carrier.items())


def extract_context(metadata: Sequence[tuple[str, str]] | None) -> otel_context.Context:
    return propagate.extract({k: v for k, v in (metadata or ())})


def start_metrics_server(port: int, host: str = "127.0.0.1") -> int:
    """Serve Prometheus /metrics; returns the bound port (0 picks a free one).

    Without prometheus_client's `_created` series: Prometheus 2 stores them as gauges of their own,
    one more series per counter and histogram that no query of ours reads."""
    from prometheus_client import disable_created_metrics, start_http_server

    disable_created_metrics()

    server, _thread = start_http_server(port, addr=host)
    return server.server_port
