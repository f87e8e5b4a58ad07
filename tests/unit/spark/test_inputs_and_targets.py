"""Pure helpers of the jobs: which span files are which format, the planner's target set, the TLS flags."""

from __future__ import annotations

import argparse
import importlib

import pytest

from replog.spark import inputs, planner, traces
from replog.spark.main import JOBS, JobError, build_parser, job_parser
from replog.spark.planner import Change, PlanInputError
from replog.spark.schema import ExportError


def test_span_files_are_sorted_by_format_and_empty_ones_skipped(tmp_path):
    (tmp_path / "replog-controller-1.jsonl").write_text('{"trace_id":"a","span_id":"b"}\n')
    (tmp_path / "replog-broker-1.jsonl").write_text("\n\n")
    (tmp_path / "otlp").mkdir()
    (tmp_path / "otlp" / "spans.json").write_text('\n{"resourceSpans":[]}\n')
    (tmp_path / "notes.txt").write_text("not spans")
    jsonl, otlp = traces.span_files([str(tmp_path)])
    assert [p.rsplit("/", 1)[1] for p in jsonl] == ["replog-controller-1.jsonl"]
    assert [p.rsplit("/", 1)[1] for p in otlp] == ["spans.json"]


def test_no_spans_is_an_error(tmp_path):
    with pytest.raises(ExportError, match="no such trace file or directory"):
        traces.span_files([str(tmp_path / "missing")])
    with pytest.raises(ExportError, match="no spans in"):
        traces.span_files([str(tmp_path)])


def test_targets_add_remove_and_racks():
    known = {1: "a", 2: "b", 3: "a"}
    racks, targets = planner.target_brokers(known, Change(add=(4,), remove=(3,), racks={4: "b"}))
    assert targets == [1, 2, 4] and racks[4] == "b" and racks[3] == "a"
    # An added broker already registered keeps its rack.
    racks, targets = planner.target_brokers({**known, 4: "c"}, Change(add=(4,)))
    assert targets == [1, 2, 3, 4] and racks[4] == "c"
    with pytest.raises(PlanInputError, match="no broker would be left"):
        planner.target_brokers({1: None}, Change(remove=(1,)))
    with pytest.raises(PlanInputError, match="--racks names broker"):
        planner.target_brokers(known, Change(racks={9: "a"}))


def test_option_parsers():
    assert planner.parse_ids("7,8, 9") == (7, 8, 9)
    assert planner.parse_racks("7:a,8:b") == {7: "a", 8: "b"}
    for bad in ("7a", "x:a", "7:"):
        with pytest.raises(argparse.ArgumentTypeError):
            planner.parse_racks(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        planner.parse_ids("7,x")


@pytest.mark.parametrize("job, required", [
    ("traffic", ["--bootstrap", "b:9092", "--subscribe", "orders", "--gateway", "g:9090"]),
    ("report", ["--gateway", "g:9090"]),
    ("plan", ["--gateway", "g:9090", "--out", "plan.json"])])
def test_the_jobs_that_call_the_cluster_take_the_clis_tls_flags(job, required):
    files = ["--tls-ca-file", "ca.pem", "--tls-cert-file", "me.pem", "--tls-key-file", "me.key"]
    for parse in (lambda argv: build_parser().parse_args([job, *argv]), job_parser(job).parse_args):
        args = parse([*required, *files])
        inputs.check_tls_arguments(args)
        assert inputs.tls_options(args) == {"tls_ca_file": "ca.pem", "tls_cert_file": "me.pem",
                                            "tls_key_file": "me.key"}
        assert inputs.tls_options(parse([*required, "--insecure"])) == {"insecure": "true"}
        assert inputs.tls_options(parse(required)) == {}  # the sources resolve TLS as every client does


def test_tls_flags_are_checked_before_spark_starts():
    def checked(job, *argv):
        args = build_parser().parse_args([job, *argv])
        importlib.import_module(JOBS[job][0]).check_inputs(args)

    with pytest.raises(JobError, match=r"--tls-ca-file, --tls-cert-file and --tls-key-file go together: set all "
                                       r"three \(missing: --tls-key-file\)"):
        checked("report", "--gateway", "g:9090", "--tls-ca-file", "ca.pem", "--tls-cert-file", "me.pem")
    with pytest.raises(JobError, match="--insecure .* contradict"):
        checked("traffic", "--bootstrap", "b:9092", "--subscribe", "t", "--gateway", "g:9090", "--insecure",
                "--tls-ca-file", "ca.pem")
    with pytest.raises(JobError, match="are for --gateway"):
        checked("plan", "--export", "/nowhere", "--out", "plan.json", "--insecure")
    with pytest.raises(SystemExit):  # the failover report reads trace files only: no TLS flag to ignore
        build_parser().parse_args(["failovers", "--traces", "t", "--insecure"])


@pytest.mark.parametrize("fmt", ["parquet", "ndjson"])
def test_a_change_the_exported_brokers_cannot_take_is_refused_before_spark_starts(tmp_path, fmt):
    from replog.spark import synthetic

    export = synthetic.write_export(tmp_path / "export", {"broker_id": [1, 2], "rack": ["a", None]},
                                    {"topic": ["t"], "partition": [0], "replicas": [[1, 2]]}, fmt=fmt)
    _, paths = inputs.export_files(str(export))
    assert inputs.export_broker_racks(fmt, paths["brokers"]) == {1: "a", 2: None}
    args = build_parser().parse_args(["plan", "--export", str(export), "--out", "plan.json", "--add-brokers", "3",
                                      "--racks", "3:c"])
    with pytest.raises(JobError, match=r"broker\(s\) 2 have no rack while others do"):
        planner.check_inputs(args)
    racked = synthetic.write_export(tmp_path / "racked", {"broker_id": [1, 2], "rack": ["a", "b"]},
                                    {"topic": ["t"], "partition": [0], "replicas": [[1, 2]]}, fmt=fmt)
    planner.check_inputs(build_parser().parse_args(["plan", "--export", str(racked), "--out", "plan.json",
                                                    "--add-brokers", "3", "--racks", "3:c"]))


def test_a_brokers_table_in_parts_is_left_to_spark(tmp_path):
    (tmp_path / "brokers").mkdir()
    assert inputs.export_broker_racks("parquet", tmp_path / "brokers") is None
