"""replog-spark and spark-submit as a person runs them: help, usage, one-line errors, a whole job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replog.common.export_schema import SCHEMA_VERSION
from replog.spark import synthetic

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent
JOBS_DIR = Path(__file__).resolve().parents[3] / "spark" / "src" / "replog" / "spark"


def replog_spark(*args, timeout=120, env=None):
    return subprocess.run([str(BIN / "replog-spark"), *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def temp_dir(tmp_path) -> tuple[Path, dict]:
    """A temp dir of the run's own, and the environment that gives it (TMPDIR): what the run leaves there."""
    path = tmp_path / "tmp"
    path.mkdir()
    return path, {**os.environ, "TMPDIR": str(path)}


@pytest.mark.parametrize("job", ["report", "plan", "failovers"])
def test_help_names_master_and_inputs(job):
    result = replog_spark(job, "--help")
    assert result.returncode == 0
    assert "--master" in result.stdout and ("--export" in result.stdout or "--traces" in result.stdout)


def test_usage_errors_exit_2():
    assert replog_spark().returncode == 2
    assert replog_spark("report").returncode == 2                       # no --export / --gateway
    assert replog_spark("plan", "--export", "x").returncode == 2        # no --out
    assert replog_spark("plan", "--export", "x", "--out", "p", "--racks", "7a").returncode == 2


def export(tmp_path, **kwargs):
    return synthetic.write_export(tmp_path / "export", {"broker_id": [1, 2], "rack": ["a", "b"]},
                                  {"topic": ["t"], "partition": [0], "replicas": [[1, 2]]}, **kwargs)


def one_line_error(result) -> str:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("replog-spark: error: ")
    return lines[0]


def test_bad_inputs_fail_in_one_line_before_spark_starts(tmp_path):
    assert "no such export directory" in one_line_error(replog_spark("report", "--export", str(tmp_path / "none")))

    wrong = export(tmp_path / "newer", schema_version=SCHEMA_VERSION + 1)
    refusal = one_line_error(replog_spark("report", "--export", str(wrong)))
    assert f"schema version {SCHEMA_VERSION + 1} is not supported" in refusal

    empty = synthetic.write_export(tmp_path / "empty", {"broker_id": [1]}, {"topic": [], "partition": [],
                                                                          "replicas": []})
    assert "the export is empty" in one_line_error(replog_spark("plan", "--export", str(empty), "--out", "x.json"))

    missing = export(tmp_path / "missing", fmt="ndjson")
    rows = [json.loads(line) for line in (missing / "partitions.ndjson").read_text().splitlines()]
    (missing / "partitions.ndjson").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "isr"}) + "\n"
                                                       for r in rows))
    assert "lacks column isr" in one_line_error(replog_spark("report", "--export", str(missing)))

    assert "no such trace file or directory" in one_line_error(
        replog_spark("failovers", "--traces", str(tmp_path / "no-traces")))
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "replog-broker-1.jsonl").write_text("")
    assert "no spans in" in one_line_error(replog_spark("failovers", "--traces", str(tmp_path / "quiet")))


def test_a_plan_the_exported_brokers_cannot_make_fails_in_one_line_before_spark_starts(tmp_path):
    temp, env = temp_dir(tmp_path)
    line = one_line_error(replog_spark("plan", "--export", str(export(tmp_path)), "--add-brokers", "3",
                                       "--out", str(tmp_path / "p.json"), "--master", "local[1]", timeout=180,
                                       env=env))
    assert line.endswith("broker(s) 3 have no rack while others do (give every broker a rack, e.g. --racks 3:a)")
    assert not list(temp.glob("replog-spark-*.log"))  # no JVM started, so no JVM log


def test_spark_submit_runs_a_job_file(tmp_path):
    """The same file under spark-submit: master and options from the command line."""
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    path = synthetic.write_export(tmp_path / "export", {"broker_id": list(racks), "rack": list(racks.values())},
                                  synthetic.round_robin(racks, 2, 30, 3))
    out = tmp_path / "plan.json"
    temp, env = temp_dir(tmp_path)
    env["PYSPARK_PYTHON"] = sys.executable
    result = subprocess.run(
        [str(BIN / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         str(JOBS_DIR / "planner.py"), "--export", str(path), "--add-brokers", "7,8,9", "--racks", "7:a,8:b,9:c",
         "--out", str(out)], capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "moves_lower_bound" in result.stdout
    plan = json.loads(out.read_text())
    assert plan["version"] == 1 and {7, 8, 9} <= {b for p in plan["partitions"] for b in p["replicas"]}
    assert not list(temp.glob("replog-spark-*.log"))
