"""The CLI's readers of Kafka's JSON files and its argument types (no cluster needed)."""

from __future__ import annotations

import argparse
import json

import pytest

from replog.cli import args, plan_files
from replog.cli.output import CliError, render_table


def write(tmp_path, value) -> str:
    path = tmp_path / "plan.json"
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


def test_reassignment_round_trip_in_kafkas_shape(tmp_path):
    plan = plan_files.reassignment_json([("t", 1, [2, 3]), ("t", 0, [1, 2])])
    assert plan == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]},
    ]}
    assert plan_files.read_reassignment(write(tmp_path, plan)) == [("t", 0, [1, 2]), ("t", 1, [2, 3])]


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "is not JSON"),
    ({"version": 1}, "'partitions' list"),
    ({"partitions": [{"partition": 0, "replicas": [1]}]}, "partitions[0] needs a string 'topic'"),
    ({"partitions": [{"topic": "t", "partition": "0", "replicas": [1]}]}, "integer 'partition'"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, "2"]}]}, "list of broker ids"),
])
def test_bad_reassignment_files_are_one_line_errors(tmp_path, content, fragment):
    with pytest.raises(CliError) as caught:
        plan_files.read_reassignment(write(tmp_path, content))
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_missing_file_is_a_cli_error(tmp_path):
    with pytest.raises(CliError, match="cannot read"):
        plan_files.read_reassignment(str(tmp_path / "missing.json"))


def test_topics_and_election_files(tmp_path):
    assert plan_files.read_topics(write(tmp_path, {"version": 1, "topics": [{"topic": "a"}, {"topic": "b"}]})) == ["a", "b"]
    assert plan_files.read_partitions(write(tmp_path, {"partitions": [{"topic": "a", "partition": 2}]})) == [("a", 2)]


def test_argument_types():
    assert args.replica_assignment("1:2,2:3") == [[1, 2], [2, 3]]
    assert args.broker_list("1,2, 3") == [1, 2, 3]
    assert args.config_pair("min.insync.replicas=2") == ("min.insync.replicas", "2")
    for parse, bad in ((args.replica_assignment, "1:x"), (args.broker_list, "a"), (args.config_pair, "novalue"),
                       (args.positive, "0"), (args.non_negative, "-1")):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)


def test_tables_are_aligned_and_never_truncated():
    text = render_table("", ["TOPIC", "REPLICAS"], [["x" * 300, "1,2,3"], ["t", None]])
    lines = text.splitlines()
    assert lines[1].startswith("x" * 300) and lines[1].endswith("1,2,3")
    assert lines[2].split() == ["t", "-"]
    assert all(line == line.rstrip() for line in lines)
