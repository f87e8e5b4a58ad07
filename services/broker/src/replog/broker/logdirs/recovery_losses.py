"""Report what start-up recovery could not find: a metric, a log line per partition
(replicas/replica_manager.py), a span.

After an unclean shutdown (no clean-shutdown marker, log/clean_shutdown.py) a
replica whose log ends below its checkpointed HW lost committed records. They
are never clamped away in silence: the broker counts them in
`replog_broker_recovery_lost_records_total`, flags the start in
`replog_broker_unclean_start`, and records one `broker.recovery` span with an
event per such partition, so traces of the incident show it beside the
elections it caused.
"""

from __future__ import annotations

from opentelemetry import trace

from replog.broker.replicas.replica_manager import ReplicaManager
from replog.broker.runtime.metrics import BrokerMetrics

tracer = trace.get_tracer("replog.broker")


def report_recovery(replicas: ReplicaManager, metrics: BrokerMetrics) -> None:
    lost = replicas.lost_records
    metrics.unclean_start.set(0 if replicas.clean_start else 1)
    metrics.recovery_lost_partitions.set(len(lost))
    metrics.recovery_lost_records.inc(sum(item.count for item in lost))
    attributes = {"clean_shutdown": replicas.clean_start, "partitions.lost_records": len(lost),
                  "records.lost": sum(item.count for item in lost)}
    with tracer.start_as_current_span("broker.recovery", attributes=attributes) as span:
        for item in lost:
            span.add_event("lost_committed_records", {
                "topic": item.topic, "partition": item.partition, "records": item.count,
                "high_watermark.checkpointed": item.checkpointed_high_watermark,
                "log_end_offset.recovered": item.recovered_log_end_offset,
            })
