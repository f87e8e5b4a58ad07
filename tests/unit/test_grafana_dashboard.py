"""The Grafana dashboard charts every metric the services export under the names they use."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_dashboard_covers_the_metrics_of_design_section_7():
    dashboard = json.loads((REPO / "deploy/grafana/replog-dashboard.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    for metric in ("replog_controller_active_controller_count", "replog_controller_offline_partitions_count",
                   "replog_controller_global_partition_count", "replog_controller_leader_elections_total",
                   "replog_controller_leader_election_time_ms_bucket", "replog_controller_unclean_leader_elections_total",
                   "replog_controller_event_queue_size", "replog_controller_event_queue_time_ms_bucket",
                   "replog_broker_under_replicated_partitions", "replog_broker_under_min_isr_partition_count",
                   "replog_broker_at_min_isr_partition_count", "replog_broker_offline_replica_count",
                   "replog_broker_leader_count", "replog_broker_partition_count", "replog_broker_isr_shrinks_total",
                   "replog_broker_isr_expands_total", "replog_broker_failed_isr_updates_total",
                   "replog_broker_produce_requests_total", "replog_broker_fetch_latency_ms_bucket"):
        assert metric in exprs, metric


def test_every_charted_metric_is_defined_by_a_service():
    dashboard = json.loads((REPO / "deploy/grafana/replog-dashboard.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    sources = " ".join(p.read_text() for p in (REPO / "services").rglob("metrics.py"))
    for name in set(re.findall(r"replog_[a-z_]+", exprs)):
        base = re.sub(r"_(total|bucket|count|sum)$", "", name)
        assert f'"{base}"' in sources or f'"{name}"' in sources, name
