"""Structured logging: one line per record, with service and instance on every line, and the trace.

Two formats (each service's `log_format` key): `json`, the default, one JSON object per line
(`ts`, `level`, `service`, `instance`, `logger`, `msg`, and `exc` with a traceback), for log
shippers; `text`, one plain line for people reading a terminal. A line written inside a span also
carries the span's `trace_id` and `span_id` (32 and 16 hex digits, as the span files and every
trace UI write them), so a log search by a trace's id finds what each process said while it
worked on that trace. Reading the current span is a context-variable lookup, paid per line.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from opentelemetry import trace

FORMATS = ("json", "text")


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def trace_ids() -> tuple[str, str] | None:
    """(trace id, span id) of the current span, in hex; None outside a span."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, instance: str) -> None:
        super().__init__()
        self.service = service
        self.instance = instance

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "service": self.service,
            "instance": self.instance,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        ids = trace_ids()
        if ids is not None:
            entry["trace_id"], entry["span_id"] = ids
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """`<ts> <level> <service>-<instance> <logger>: <msg>`, then `trace_id=.. span_id=..` inside a span."""

    def __init__(self, service: str, instance: str) -> None:
        super().__init__()
        self.origin = f"{service}-{instance}"

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname.lower():<8} {self.origin} {record.name}: {record.getMessage()}"
        ids = trace_ids()
        if ids is not None:
            line += f" trace_id={ids[0]} span_id={ids[1]}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(service: str, instance: str, level: str = "info", log_format: str = "json") -> None:
    assert log_format in FORMATS, log_format
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter((JsonFormatter if log_format == "json" else TextFormatter)(service, instance))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("kazoo").setLevel(logging.WARNING)
