"""The metric table (replog.common.metrics.table) is the one owner of every metric's name, type and
labels: each row keeps Prometheus' conventions, the services export exactly its rows, no file names
a metric the last release renamed, and the alert rules query only metrics it holds."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import CollectorRegistry

from replog.common.metrics import table

REPO = Path(__file__).resolve().parents[2]
# Where old names are meant to appear: the rename table itself and the page drawn from it.
RENAME_RECORDS = {"libs/common/src/replog/common/metrics/table.py", "docs/metrics.md"}


@pytest.mark.parametrize("metric", table.TABLE, ids=lambda m: m.name)
def test_every_row_keeps_the_conventions(metric):
    assert table.check_conventions(metric) == []


def test_the_conventions_catch_what_promtool_warns_about():
    bad = [table.Metric("replog_broker_widget_count", table.GAUGE, "x", section="Cluster"),
           table.Metric("replog_broker_latency_ms", table.HISTOGRAM, "x", section="Cluster", buckets=(1,)),
           table.Metric("replog_broker_requests", table.COUNTER, "x", section="Cluster"),
           table.Metric("replog_broker_open_total", table.GAUGE, "x", section="Cluster"),
           table.Metric("replog_broker_lag", table.GAUGE, "x", ("dir",), section="Cluster")]
    assert all(table.check_conventions(m) for m in bad)


def _exported(registry: CollectorRegistry) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name as scraped -> (type, label names) of every replog family in `registry`."""
    found = {}
    for family in registry.collect():
        if not family.name.startswith("replog_"):
            continue
        name = family.name + {"counter": "_total", "info": "_info"}.get(family.type, "")
        labels = set()
        for sample in family.samples:
            labels |= set(sample.labels) - {"le"}
        found[name] = (family.type, tuple(sorted(labels)))
    return found


class _Directory:
    """Stands in for a LogDirectory (logdirs/log_dirs.py)."""

    path, online = Path("/"), True
    space = SimpleNamespace(free_bytes_min=0)


def test_the_services_export_exactly_the_table(tmp_path):
    from prometheus_client import REGISTRY

    from replog.broker.runtime.metrics import BrokerMetrics, GroupRow, PartitionSummary
    from replog.common.metrics.process import ProcessMetrics
    from replog.common.security.certificates import new_authority
    from replog.common.security.files import TlsFiles
    from replog.gateway.metrics import GatewayMetrics

    controller = importlib.import_module("replog.controller.adapters.metrics")  # registers at import
    broker = CollectorRegistry()
    metrics = BrokerMetrics(broker)
    metrics.watch_partitions(PartitionSummary)
    metrics.watch_groups(lambda: [GroupRow("g", 1, 1, (("t", 0, 5),))])
    metrics.watch_log_dirs([_Directory])
    metrics.watch_descriptors(SimpleNamespace(open_count=0, descriptors_max=0, logs_released=0))
    gateway = GatewayMetrics(broker)
    values = {"acks": "1", "kind": "consumer", "error": "NOT_LEADER", "event": "Startup", "method": "CreateTopic",
              "code": "UNAVAILABLE"}
    for labelled in (metrics.produce_errors, metrics.produce_requests, metrics.produce_duration_s,
                     metrics.fetch_requests, metrics.fetch_duration_s, metrics.bytes_out, metrics.fetch_errors,
                     gateway.requests, gateway.request_errors, controller.EVENT_PROCESSING_S):
        labelled.labels(*(values[n] for n in labelled._labelnames))  # noqa: SLF001 - one series shows the labels
    exported = {**_exported(broker), **_exported(REGISTRY)}
    ca = new_authority(tmp_path).ca_file
    for info in (table.BROKER_INFO, table.CONTROLLER_INFO, table.GATEWAY_INFO):
        registry = CollectorRegistry()
        process = ProcessMetrics(info, {label: "1" for label in info.labels}, registry)
        process.watch_certificates(TlsFiles(str(ca), str(ca), str(ca.with_suffix(".key"))))
        exported.update(_exported(registry))
    wanted = {m.name: (m.kind, tuple(sorted(m.labels))) for m in table.TABLE}
    assert exported == wanted


def test_certificate_expiry_is_the_not_after_of_the_files(tmp_path):
    from replog.common.metrics.process import ProcessMetrics
    from replog.common.security.certificates import new_authority
    from replog.common.security.files import TlsFiles

    authority = new_authority(tmp_path)
    registry = CollectorRegistry()
    process = ProcessMetrics(table.GATEWAY_INFO, {"gateway_id": "1", "version": "x"}, registry)
    process.watch_certificates(TlsFiles(str(authority.ca_file), str(authority.ca_file), "unused"))
    expiry = authority.certificate.not_valid_after_utc.timestamp()
    name = table.TLS_CERTIFICATE_EXPIRY.name
    assert registry.get_sample_value(name, {"certificate": "process"}) == expiry
    assert registry.get_sample_value(name, {"certificate": "ca"}) == expiry


def test_zookeeper_session_states_move_the_session_metrics():
    from replog.common.metrics.process import ProcessMetrics

    registry = CollectorRegistry()
    process = ProcessMetrics(table.GATEWAY_INFO, {"gateway_id": "1", "version": "x"}, registry)
    for state in ("connected", "suspended", "connected", "lost", "connected"):
        process.on_zookeeper_session(state)
    assert registry.get_sample_value(table.ZOOKEEPER_CONNECTED.name) == 1
    assert registry.get_sample_value(table.ZOOKEEPER_SESSION_EXPIRATIONS.name) == 1


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return [REPO / name for name in names if name not in RENAME_RECORDS and (REPO / name).is_file()]


def test_no_file_names_a_renamed_metric():
    old = re.compile(r"\b(" + "|".join(map(re.escape, table.RENAMED)) + r")(_bucket|_sum|_count)?\b")
    found = []
    for path in _tracked_text_files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for match in old.finditer(text):
            if match.group(1) in table.BY_NAME:  # an old counter's name with its _total is a new name
                continue
            found.append(f"{path.relative_to(REPO)}: {match.group(0)}")
    assert not found, found


def _queried(text: str) -> set[str]:
    return _series_families(re.findall(r"\breplog_[a-z0-9_]*[a-z0-9]\b", text))


def _series_families(series: list[str]) -> set[str]:
    """The metric families the names belong to: a histogram's `_bucket`, `_sum` and `_count` series
    are its family's."""
    names = set()
    for name in series:
        for suffix in ("_bucket", "_sum", "_count"):
            base = name.removesuffix(suffix)
            if base != name and table.BY_NAME.get(base, table.CONTROLLER_ACTIVE).kind == table.HISTOGRAM:
                name = base
        names.add(name)
    return names


def test_the_alert_rules_query_only_metrics_of_the_table():
    rule_files = sorted((REPO / "deploy" / "prometheus").glob("*alerts*.yml")) + \
        sorted((REPO / "deploy" / "prometheus").glob("*rules*.yml"))
    assert rule_files
    for path in rule_files:
        unknown = _queried(path.read_text()) - set(table.BY_NAME)
        assert not unknown, (path.name, unknown)


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [text for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and (text := ast.get_docstring(node, clean=False))]


def test_every_metric_the_docs_name_is_in_the_table():
    """A reader who copies a metric's name from the docs into a query must find it scraped. Names
    followed by `-` are wheels (`replog_client-*.whl`), names ending in `_` are prefixes; the old
    names of the last rename appear only in the rename note drawn from RENAMED."""
    texts = {path: path.read_text() for path in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]}
    texts |= {path: path.read_text() for path in sorted((REPO / "deploy").rglob("*"))
              if path.is_file() and path.suffix in {".md", ".py", ".sh", ".yml", ".yaml", ".toml", ".json"}}
    for folder in ("services", "libs", "spark"):
        texts |= {path: "\n".join(_docstrings(path)) for path in sorted((REPO / folder).rglob("*.py"))}
    unknown = []
    for path, text in texts.items():
        where = str(path.relative_to(REPO))
        known = set(table.BY_NAME) | (set(table.RENAMED) if where in RENAME_RECORDS else set())
        named = _series_families(re.findall(r"\breplog_[a-z0-9_]*[a-z0-9](?![\w-])", text))
        unknown += [f"{where}: {name}" for name in sorted(named - known)]
    assert len(texts) > 50
    assert unknown == []
