"""Pure helpers of the jobs: which span files are which format, and the planner's target set."""

from __future__ import annotations

import argparse

import pytest

from replog.spark import planner, traces
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
