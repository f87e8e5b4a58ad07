"""Failover report: how long each failover took, phase by phase, from the trace files.

A failover is one trace (docs/architecture.md, "A broker failure"). Its root is a controller span:

* ``controller.broker_change`` with a non-empty ``brokers.dead``: **broker_failure**
  (a change that only adds brokers is not a failover and is left out);
* ``controller.controlled_shutdown``: **controlled_shutdown** (the broker asked);
* ``controller.failover``: **controller_failover** (a new controller took the seat).

Its children: ``controller.load_state`` (controller failover only),
``controller.decide``, ``controller.zookeeper_write`` (``zookeeper.transactions``,
``.ops``, ``.bytes``), ``controller.send_requests`` with one
``controller.send.<Request>`` per request (``broker.id``, ``partitions``), and the
brokers' own spans (``broker.become_leader`` / ``become_follower`` / ``truncate``,
resource ``service.instance.id`` = broker id), which join through the W3C context.

Per failover (all in milliseconds):

* ``detection_ms``: death -> the controller noticed (``controller.noticed_at_ms``,
  else the root's start). **Measured** when the death time is known (``--deaths``:
  rows of role, id, died_at_ms, e.g. written by a fault test that kills the
  process); otherwise **inferred** as ``zookeeper.session_timeout_ms`` (ZooKeeper
  expires a dead broker's session, and its znode, after that long);
  ``detection_source`` says which. A controlled shutdown has nothing to detect (0).
* ``queue_ms``: noticed -> the event loop started on it (``event.queue_time_ms``).
  Detection + queue is "span start - death".
* ``load_state_ms``, ``decide_ms``, ``zookeeper_write_ms``: their spans' durations.
* ``send_requests_ms``: the fan-out span; ``requests``, ``brokers_contacted``,
  ``leader_and_isr_partitions`` count what it sent.
* ``slowest_broker`` and ``slowest_broker_ms``: the broker whose last span in the
  trace (the controller's request to it, or its own spans) ended last, measured
  from the start of the fan-out.
* ``handling_ms``: root start -> the last span of the trace ends;
  ``total_ms`` = detection + queue + handling.

Across failovers: percentiles (p50, p90, p99, max) of each phase per kind, and
the trend by partitions affected (decade buckets, and a least-squares slope in
ms per 1000 partitions).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ROOT_KINDS = {
    "controller.broker_change": "broker_failure",
    "controller.controlled_shutdown": "controlled_shutdown",
    "controller.failover": "controller_failover",
}
PHASE_METRICS = ("detection_ms", "queue_ms", "load_state_ms", "decide_ms", "zookeeper_write_ms", "send_requests_ms",
                 "slowest_broker_ms", "handling_ms", "total_ms")
DEATHS_SCHEMA = "role string, id int, died_at_ms bigint"
_NS_PER_MS = 1_000_000.0


def _attr(name: str, kind: str = "bigint"):
    return F.col("attributes").getItem(name).cast(kind)


def _ms(ns):
    return ns / F.lit(_NS_PER_MS)


# --- DataFrame -> DataFrame --------------------------------------------------------------------

def failover_roots(spans: DataFrame) -> DataFrame:
    """One row per failover trace: its root span's facts."""
    kind = F.element_at(F.create_map(*[F.lit(x) for pair in ROOT_KINDS.items() for x in pair]), F.col("name"))
    dead = F.coalesce(F.from_json(F.col("attributes").getItem("brokers.dead"), "array<int>"), F.array().cast("array<int>"))
    # The controller's event span is the root of its trace, unless a caller's context came with
    # the event (a broker's ControlledShutdown RPC, say): a parent from another service, or one
    # not in these files, still leaves it the failover's top controller span.
    candidates = spans.where(F.col("name").isin(*ROOT_KINDS)).alias("s")
    parents = spans.select(F.col("span_id").alias("p_span_id"), F.col("service").alias("p_service"))
    roots = (candidates.join(parents, F.col("s.parent_span_id") == F.col("p_span_id"), "left")
             .where(F.col("p_span_id").isNull() | (F.col("p_service") != F.col("s.service")))
             .select("s.*")
             .withColumn("kind", kind)
             .withColumn("brokers_dead", dead)
             .where((F.col("kind") != "broker_failure") | (F.size("brokers_dead") > 0)))
    return roots.select(
        "trace_id", "kind",
        F.col("start_ns").alias("root_start_ns"),
        F.col("end_ns").alias("root_end_ns"),
        F.timestamp_millis((F.col("start_ns") / 1_000_000).cast("bigint")).alias("started_at"),
        "brokers_dead",
        F.coalesce(_attr("broker.id", "int"), _attr("controller.id", "int")).alias("subject_id"),
        _attr("controller.epoch", "int").alias("controller_epoch"),
        F.coalesce(_attr("partitions.affected"), _attr("partitions")).alias("partitions_affected"),
        _attr("leader_elections").alias("leader_elections"),
        _attr("zookeeper.session_timeout_ms").alias("session_timeout_ms"),
        _attr("controller.noticed_at_ms").alias("noticed_at_ms"),
        _attr("event.queue_time_ms", "double").alias("queue_time_attr_ms"),
    )


def phase_durations(spans: DataFrame, roots: DataFrame) -> DataFrame:
    """Per failover trace: the controller's phases and the fan-out's counts."""
    in_trace = spans.join(roots.select("trace_id"), "trace_id")
    duration = _ms(F.col("end_ns") - F.col("start_ns"))

    def total(name: str):
        return F.sum(F.when(F.col("name") == name, duration))

    is_send = F.col("name").startswith("controller.send.")
    return in_trace.groupBy("trace_id").agg(
        total("controller.load_state").alias("load_state_ms"),
        total("controller.decide").alias("decide_ms"),
        total("controller.zookeeper_write").alias("zookeeper_write_ms"),
        total("controller.send_requests").alias("send_requests_ms"),
        F.min(F.when(F.col("name") == "controller.send_requests", F.col("start_ns"))).alias("send_start_ns"),
        F.max(F.when(F.col("name") == "controller.send_requests", F.col("end_ns"))).alias("send_end_ns"),
        F.sum(F.when(F.col("name") == "controller.zookeeper_write", _attr("zookeeper.transactions")))
        .alias("zookeeper_transactions"),
        F.sum(F.when(F.col("name") == "controller.zookeeper_write", _attr("zookeeper.ops"))).alias("zookeeper_ops"),
        F.sum(F.when(F.col("name") == "controller.zookeeper_write", _attr("zookeeper.bytes"))).alias("zookeeper_bytes"),
        F.count(F.when(is_send, 1)).alias("requests"),
        F.countDistinct(F.when(is_send, _attr("broker.id", "int"))).alias("brokers_contacted"),
        F.sum(F.when(F.col("name") == "controller.send.LeaderAndIsrRequest", _attr("partitions")))
        .alias("leader_and_isr_partitions"),
        F.count(F.when(F.col("status") == "ERROR", 1)).alias("error_spans"),
        F.max("end_ns").alias("last_end_ns"),
    )


def slowest_brokers(spans: DataFrame, roots: DataFrame) -> DataFrame:
    """Per failover trace: the broker that finished last, and when."""
    in_trace = spans.join(roots.select("trace_id"), "trace_id")
    broker = (F.when(F.col("name").startswith("controller.send."), _attr("broker.id", "int"))
              .when(F.col("service") == "replog-broker", F.col("instance").cast("int")))
    per_broker = (in_trace.withColumn("broker_id", broker).where(F.col("broker_id").isNotNull())
                  .groupBy("trace_id", "broker_id").agg(F.max("end_ns").alias("done_ns")))
    return per_broker.groupBy("trace_id").agg(
        F.max_by("broker_id", F.struct("done_ns", F.col("broker_id"))).alias("slowest_broker"),
        F.max("done_ns").alias("slowest_done_ns"),
    )


def measured_deaths(roots: DataFrame, deaths: DataFrame | None) -> DataFrame:
    """Per failover trace: the death time of what failed, when known (latest death before the notice)."""
    if deaths is None:
        return roots.select("trace_id", F.lit(None).cast("bigint").alias("died_at_ms"))
    noticed = F.coalesce("noticed_at_ms", (F.col("root_start_ns") / 1_000_000).cast("bigint"))
    failed = (roots.where(F.col("kind") == "broker_failure")
              .select("trace_id", noticed.alias("noticed_ms"), F.lit("broker").alias("role"),
                      F.explode("brokers_dead").alias("id")))
    took_over = (roots.where(F.col("kind") == "controller_failover")
                 .select("trace_id", noticed.alias("noticed_ms"), F.lit("controller").alias("role"),
                         F.lit(None).cast("int").alias("id")))
    candidates = failed.unionByName(took_over)
    d = deaths.select(F.lower("role").alias("d_role"), F.col("id").alias("d_id"), "died_at_ms")
    matched = candidates.join(
        d, (F.col("role") == F.col("d_role")) & ((F.col("id") == F.col("d_id")) | F.col("id").isNull())
        & (F.col("died_at_ms") <= F.col("noticed_ms")))
    # Each failed process's latest death before the notice; the earliest of those starts the failover.
    latest = matched.groupBy("trace_id", "role", "id").agg(F.max("died_at_ms").alias("died_at_ms"))
    return latest.groupBy("trace_id").agg(F.min("died_at_ms").alias("died_at_ms"))


def failover_table(spans: DataFrame, deaths: DataFrame | None = None) -> DataFrame:
    """One row per failover, oldest first, with every phase in milliseconds."""
    roots = failover_roots(spans)
    phases = phase_durations(spans, roots)
    slowest = slowest_brokers(spans, roots)
    died = measured_deaths(roots, deaths)
    joined = roots.join(phases, "trace_id", "left").join(slowest, "trace_id", "left").join(died, "trace_id", "left")
    start_ms = F.col("root_start_ns") / _NS_PER_MS
    noticed_ms = F.coalesce(F.col("noticed_at_ms").cast("double"), start_ms)
    measured = noticed_ms - F.col("died_at_ms")
    is_shutdown = F.col("kind") == "controlled_shutdown"
    detection_source = (F.when(is_shutdown, "requested").when(F.col("died_at_ms").isNotNull(), "measured")
                        .when(F.col("session_timeout_ms").isNotNull(), "inferred").otherwise("unknown"))
    detection = (F.when(is_shutdown, F.lit(0.0)).when(F.col("died_at_ms").isNotNull(), measured)
                 .otherwise(F.col("session_timeout_ms").cast("double")))
    queue = F.coalesce("queue_time_attr_ms", F.greatest(F.lit(0.0), start_ms - F.col("noticed_at_ms")), F.lit(0.0))
    handling = _ms(F.greatest("last_end_ns", "root_end_ns") - F.col("root_start_ns"))
    table = joined.select(
        "trace_id", "kind", "started_at", "controller_epoch", "brokers_dead", "subject_id",
        "partitions_affected", "leader_elections",
        detection.alias("detection_ms"), detection_source.alias("detection_source"),
        measured.alias("detection_measured_ms"), F.col("session_timeout_ms").cast("double").alias("detection_inferred_ms"),
        queue.alias("queue_ms"),
        "load_state_ms", "decide_ms", "zookeeper_write_ms", "zookeeper_transactions", "zookeeper_ops",
        "zookeeper_bytes", "send_requests_ms", "requests", "brokers_contacted", "leader_and_isr_partitions",
        "slowest_broker", _ms(F.col("slowest_done_ns") - F.col("send_start_ns")).alias("slowest_broker_ms"),
        F.greatest(F.lit(0.0), _ms(F.col("last_end_ns") - F.col("send_end_ns"))).alias("broker_tail_ms"),
        handling.alias("handling_ms"), "error_spans", "root_start_ns",
    )
    return (table.withColumn("total_ms", F.coalesce("detection_ms", F.lit(0.0)) + F.col("queue_ms") + F.col("handling_ms"))
            .orderBy("root_start_ns").drop("root_start_ns"))


def percentiles(failovers: DataFrame) -> DataFrame:
    """Per kind and phase: failovers, p50, p90, p99, max (exact percentiles)."""
    long = failovers.select("kind", F.explode(F.array(*[
        F.struct(F.lit(m).alias("metric"), F.col(m).cast("double").alias("value")) for m in PHASE_METRICS
    ])).alias("m")).select("kind", "m.metric", "m.value").where(F.col("value").isNotNull())
    order = F.array_position(F.array(*[F.lit(m) for m in PHASE_METRICS]), F.col("metric"))
    return (long.groupBy("kind", "metric").agg(
        F.count("*").alias("failovers"),
        F.percentile("value", F.array(F.lit(0.5), F.lit(0.9), F.lit(0.99))).alias("p"),
        F.max("value").alias("max_ms"),
    ).select("kind", "metric", "failovers", F.col("p")[0].alias("p50_ms"), F.col("p")[1].alias("p90_ms"),
             F.col("p")[2].alias("p99_ms"), "max_ms", order.alias("_order"))
        .orderBy("kind", "_order").drop("_order"))


def trend_by_partitions(failovers: DataFrame) -> DataFrame:
    """Per kind and decade of partitions affected (0, 1-9, 10-99, ...): medians of the main phases,
    and per kind the least-squares slope of handling time in ms per 1000 partitions."""
    n = F.coalesce("partitions_affected", F.lit(0))
    bucket = F.when(n <= 0, F.lit(0)).otherwise(F.pow(F.lit(10), F.floor(F.log10(n))).cast("bigint"))
    slope = (failovers.groupBy("kind").agg(
        (F.try_divide(F.covar_pop(n.cast("double"), "handling_ms"), F.var_pop(n.cast("double"))) * 1000)
        .alias("handling_ms_per_1000_partitions")))
    buckets = failovers.withColumn("partitions_from", bucket).groupBy("kind", "partitions_from").agg(
        F.count("*").alias("failovers"),
        F.avg(n).alias("partitions_mean"),
        F.median("zookeeper_write_ms").alias("zookeeper_write_p50_ms"),
        F.median("send_requests_ms").alias("send_requests_p50_ms"),
        F.median("handling_ms").alias("handling_p50_ms"),
        F.median("total_ms").alias("total_p50_ms"),
    )
    return buckets.join(slope, "kind", "left").orderBy("kind", "partitions_from")


# --- entry point -----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--traces", nargs="+", required=True, metavar="PATH",
                        help="span files or directories (*.jsonl from the services, or OTLP JSON)")
    parser.add_argument("--deaths", metavar="FILE",
                        help="JSON lines or CSV with role,id,died_at_ms: known death times, so detection "
                             "is measured instead of inferred from the session timeout")
    parser.add_argument("--out", metavar="DIR", help="write failovers, percentiles, trend (Parquet and CSV) "
                                                    "and failover_timeline.png here (a local path or a Hadoop URI)")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="failovers to print (default 20, latest)")


def check_inputs(args) -> None:
    from replog.spark import traces

    traces.span_files(args.traces)
    if args.deaths and not Path(args.deaths).is_file():
        from replog.spark.schema import ExportError

        raise ExportError(f"{args.deaths}: no such deaths file")


def read_deaths(spark, path: str) -> DataFrame:
    reader = spark.read.schema(DEATHS_SCHEMA)
    if path.endswith(".csv"):
        return reader.option("header", True).csv(path)
    return reader.json(path)


def run(spark, args) -> int:
    from replog.spark import charts, outputs, printing, traces
    from replog.spark.report import write_table

    spans = traces.read_spans(spark, args.traces).cache()
    deaths = read_deaths(spark, args.deaths) if args.deaths else None
    table = failover_table(spans, deaths).cache()
    rows = [r.asDict() for r in table.collect()]
    shown = ("kind", "started_at", "partitions_affected", "detection_ms", "detection_source", "queue_ms",
             "decide_ms", "zookeeper_write_ms", "send_requests_ms", "requests", "slowest_broker",
             "slowest_broker_ms", "handling_ms", "total_ms")
    print(printing.table(f"Failovers ({len(rows)}; latest {min(len(rows), args.show)} shown)",
                         [{k: r[k] for k in shown} for r in rows[-args.show:]]))
    pct = percentiles(table)
    trend = trend_by_partitions(table)
    print()
    print(printing.table("Percentiles across failovers", [r.asDict() for r in pct.collect()]))
    print()
    print(printing.table("Trend by partitions affected", [r.asDict() for r in trend.collect()]))
    if args.out:
        out = args.out
        outputs.make_dirs(spark, out)
        for name, frame in (("failovers", table), ("percentiles", pct), ("trend", trend)):
            write_table(frame, out, name, "both")
        with outputs.LocalFile(spark, outputs.join(out, "failover_timeline.png")) as png:
            charts.failover_timeline(rows, png)
        print(f"\nWrote failovers, percentiles, trend and failover_timeline.png to {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from replog.spark.main import run_job

    return run_job("failovers", argv)


if __name__ == "__main__":
    sys.exit(main())
