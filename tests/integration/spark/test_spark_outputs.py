"""Outputs at Hadoop URIs: a job on a cluster writes where the cluster reaches (s3a://, hdfs://), not the driver's disk.

Hadoop's ``file://`` file system stands in for the remote ones here: the same FileSystem calls, and the
proof that a URI is handed to Hadoop rather than turned into a local directory named "file:".
"""

from __future__ import annotations

import argparse
import json

import pytest

from replog.spark import outputs, planner, report, synthetic
from replog.spark.main import build_parser

pytestmark = pytest.mark.integration

RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}


def small_export(path):
    return synthetic.write_export(path, {"broker_id": list(RACKS), "rack": list(RACKS.values())},
                                  synthetic.round_robin(RACKS, 1, 8, 2))


def test_the_report_writes_tables_and_charts_to_a_uri(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a path mistaken for a relative one would land here
    export = small_export(tmp_path / "export")
    target = tmp_path / "remote" / "report"
    args = build_parser().parse_args(["report", "--export", str(export), "--out", target.as_uri()])
    assert report.run(spark, args) == 0
    assert (target / "brokers.parquet").is_dir() and (target / "topics.csv").is_dir()
    assert (target / "leaders_replicas_per_broker.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "file:").exists()
    assert sorted(r.broker_id for r in spark.read.parquet(target.as_uri() + "/brokers.parquet").collect()) == [
        1, 2, 3, 4]


def test_the_plan_and_its_chart_go_to_uris(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    export = small_export(tmp_path / "export")
    remote = tmp_path / "remote"
    remote.mkdir()
    args = build_parser().parse_args(["plan", "--export", str(export), "--add-brokers", "5", "--racks", "5:a",
                                      "--out", (remote / "plan.json").as_uri(),
                                      "--summary-out", (remote / "summary.json").as_uri(),
                                      "--chart", (remote / "plan.png").as_uri()])
    assert planner.run(spark, args) == 0
    plan = json.loads((remote / "plan.json").read_text())
    assert plan["version"] == 1 and 5 in {b for p in plan["partitions"] for b in p["replicas"]}
    assert json.loads((remote / "summary.json").read_text())["summary"]["replicas_moved"] > 0
    assert (remote / "plan.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "file:").exists()


def test_an_unknown_scheme_is_one_error_not_a_local_directory(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError, match="nosuchfs://bucket/plan.json"):
        outputs.write_text(spark, "nosuchfs://bucket/plan.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_conf_and_ui_options_parse():
    args = build_parser().parse_args(["report", "--export", "x", "--ui", "--conf", "spark.executor.memory=1g",
                                      "--conf", "spark.driver.host=127.0.0.1"])
    assert args.ui is True and dict(args.conf) == {"spark.executor.memory": "1g", "spark.driver.host": "127.0.0.1"}
    assert build_parser().parse_args(["report", "--export", "x"]).ui is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", "--export", "x", "--conf", "novalue"])
    assert isinstance(build_parser(), argparse.ArgumentParser)
