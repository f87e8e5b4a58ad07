"""Span files -> one span table, whichever of the two formats they are in.

Formats:

* **JSON lines** from ``replog.common.telemetry.JsonLinesSpanExporter``: one span
  per line (``span_to_dict``), files ``<trace_dir>/<service>-<instance>.jsonl``.
* **OTLP JSON**, the OpenTelemetry Collector's file exporter: one
  ``ExportTraceServiceRequest`` per line (``resourceSpans[].scopeSpans[].spans[]``,
  attributes as ``[{key, value: {stringValue|intValue|doubleValue|boolValue|arrayValue}}]``,
  times as strings of nanoseconds).

A file's format is told by its first non-empty line (``resourceSpans`` or not),
so a directory may mix both. Both become the same table::

    trace_id, span_id, parent_span_id, name, start_ns, end_ns, status,
    service, instance, attributes map<string,string>

Attribute values are kept as text — a number as its digits, a list as JSON
(``[1,2]``) — because spans of different names carry the same key with
different types; the jobs cast what they use. Spark's JSON reader does this
itself when a map's value type is string, so no Python touches a span.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replog.spark.schema import ExportError

JSONL_SCHEMA = ("trace_id string, span_id string, parent_span_id string, name string, kind string, "
                "start_ns bigint, end_ns bigint, status string, attributes map<string,string>, "
                "resource map<string,string>")

_ANY_VALUE = ("stringValue string, intValue string, doubleValue double, boolValue boolean, "
              "arrayValue struct<values: array<struct<stringValue string, intValue string, doubleValue double, "
              "boolValue boolean>>>")
_ATTRIBUTES = f"array<struct<key string, value struct<{_ANY_VALUE}>>>"
OTLP_SCHEMA = (f"resourceSpans array<struct<resource: struct<attributes: {_ATTRIBUTES}>, "
               f"scopeSpans: array<struct<spans: array<struct<traceId string, spanId string, parentSpanId string, "
               f"name string, kind string, startTimeUnixNano string, endTimeUnixNano string, "
               f"attributes: {_ATTRIBUTES}, status: struct<code string, message string>>>>>>>")

SPAN_COLUMNS = ("trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "status",
                "service", "instance", "attributes")
SUFFIXES = (".jsonl", ".json", ".ndjson")


def span_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """(JSON-lines files, OTLP files) under the given files and directories; empty files are skipped."""
    jsonl, otlp = [], []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            candidates = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        elif path.is_file():
            candidates = [path]
        else:
            raise ExportError(f"{given}: no such trace file or directory")
        for candidate in candidates:
            kind = _format_of(candidate)
            if kind == "otlp":
                otlp.append(str(candidate))
            elif kind == "jsonl":
                jsonl.append(str(candidate))
    if not jsonl and not otlp:
        raise ExportError(f"no spans in {', '.join(paths)} (expected *.jsonl span files or OTLP JSON)")
    return jsonl, otlp


def _format_of(path: Path) -> str | None:
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            text = line.strip()
            if text:
                return "otlp" if text.startswith("{") and '"resourceSpans"' in text[:200] else "jsonl"
    return None


def read_spans(spark, paths: list[str]) -> DataFrame:
    jsonl, otlp = span_files(paths)
    frames = []
    if jsonl:
        frames.append(normalize_jsonl(spark.read.schema(JSONL_SCHEMA).json(jsonl)))
    if otlp:
        frames.append(normalize_otlp(spark.read.schema(OTLP_SCHEMA).json(otlp)))
    spans = frames[0]
    for frame in frames[1:]:
        spans = spans.unionByName(frame)
    return spans


def normalize_jsonl(raw: DataFrame) -> DataFrame:
    return (raw.where(F.col("span_id").isNotNull() & F.col("start_ns").isNotNull())
            .select("trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "status",
                    F.col("resource").getItem("service.name").alias("service"),
                    F.col("resource").getItem("service.instance.id").alias("instance"),
                    F.coalesce("attributes", F.create_map().cast("map<string,string>")).alias("attributes")))


def _value_text(value):
    """An OTLP AnyValue as the JSON-lines exporter would have written it."""
    values = value.getField("arrayValue").getField("values")
    as_array = F.when(
        F.forall(values, lambda v: v.getField("intValue").isNotNull()),
        F.to_json(F.transform(values, lambda v: v.getField("intValue").cast("bigint"))),
    ).otherwise(F.to_json(F.transform(values, lambda v: F.coalesce(
        v.getField("stringValue"), v.getField("doubleValue").cast("string"), v.getField("boolValue").cast("string")))))
    return F.coalesce(value.getField("stringValue"), value.getField("intValue"),
                      value.getField("doubleValue").cast("string"), value.getField("boolValue").cast("string"),
                      F.when(values.isNotNull(), as_array))


def _attribute_map(attributes):
    entries = F.transform(F.coalesce(attributes, F.array().cast(_ATTRIBUTES)),
                          lambda a: F.struct(a.getField("key").alias("key"), _value_text(a.getField("value"))
                                             .alias("value")))
    return F.map_from_entries(entries)


def normalize_otlp(raw: DataFrame) -> DataFrame:
    resources = raw.select(F.explode("resourceSpans").alias("rs"))
    scopes = resources.select(_attribute_map(F.col("rs.resource.attributes")).alias("resource"),
                              F.explode("rs.scopeSpans").alias("ss"))
    spans = scopes.select("resource", F.explode("ss.spans").alias("s"))
    status = F.col("s.status.code")
    return spans.select(
        F.lower("s.traceId").alias("trace_id"),
        F.lower("s.spanId").alias("span_id"),
        F.when(F.col("s.parentSpanId") != "", F.lower("s.parentSpanId")).alias("parent_span_id"),
        F.col("s.name").alias("name"),
        F.col("s.startTimeUnixNano").cast("bigint").alias("start_ns"),
        F.col("s.endTimeUnixNano").cast("bigint").alias("end_ns"),
        F.when(status.isin("2", "STATUS_CODE_ERROR"), "ERROR").when(status.isin("1", "STATUS_CODE_OK"), "OK")
        .otherwise("UNSET").alias("status"),
        F.col("resource").getItem("service.name").alias("service"),
        F.col("resource").getItem("service.instance.id").alias("instance"),
        _attribute_map(F.col("s.attributes")).alias("attributes"),
    )
