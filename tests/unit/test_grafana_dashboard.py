"""The Grafana dashboard charts every metric of the metric table, under the names the services
export, and its provisioning files load it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from replog.common.metrics import table

REPO = Path(__file__).resolve().parents[2]
GRAFANA = REPO / "deploy" / "grafana"


def expressions() -> list[str]:
    dashboard = json.loads((GRAFANA / "replog-dashboard.json").read_text())
    return [t["expr"] for p in dashboard["panels"] if p["type"] != "row" for t in p["targets"]]


def test_every_metric_family_has_a_panel():
    charted = set(re.findall(r"replog_[a-z0-9_]+", " ".join(expressions())))
    missing = [m.name for m in table.TABLE
               if m.name not in charted and f"{m.name}_bucket" not in charted]
    assert not missing, f"no panel charts {missing}: run `make docs`"


def test_every_charted_metric_is_in_the_table():
    known = {m.name for m in table.TABLE} | {f"{m.name}_bucket" for m in table.TABLE if m.kind == table.HISTOGRAM}
    charted = set(re.findall(r"replog_[a-z0-9_]+", " ".join(expressions())))
    assert charted <= known, charted - known


def test_the_provisioning_files_name_the_dashboard_and_a_prometheus_data_source():
    provider = (GRAFANA / "provisioning" / "dashboards" / "replog.yml").read_text()
    datasource = (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text()
    assert "type: file" in provider and "apiVersion: 1" in provider
    assert "type: prometheus" in datasource and "apiVersion: 1" in datasource
