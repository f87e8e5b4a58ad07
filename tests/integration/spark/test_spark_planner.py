"""The planner as a Spark job: the acceptance case, removal, bad targets, and its reassignment file."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from replog.spark import inputs, planner, synthetic
from replog.spark.planner import Change, PlanInputError

pytestmark = pytest.mark.integration

SIX = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


@pytest.fixture(scope="module")
def six_brokers(spark, tmp_path_factory):
    """6 brokers in 3 racks, 600 partitions at RF 3 (6 topics of 100), sizes 1 KB .. 600 KB."""
    columns = synthetic.round_robin(SIX, topics=6, partitions_per_topic=100, replication_factor=3)
    columns["size_bytes"] = [1000 * (i + 1) for i in range(600)]
    path = synthetic.write_export(tmp_path_factory.mktemp("six") / "export",
                                  {"broker_id": list(SIX), "rack": list(SIX.values())}, columns)
    return inputs.read_export(spark, str(path))


def after_counts(topology, reassignment):
    assignment = {(r.topic, r.partition): list(r.replicas) for r in topology.partitions.collect()}
    for r in reassignment.collect():
        assignment[(r.topic, r.partition)] = list(r.replicas)
    return assignment


def test_acceptance_grow_six_brokers_to_nine(six_brokers):
    tables = planner.plan_tables(six_brokers.brokers, six_brokers.partitions,
                                 Change(add=(7, 8, 9), racks={7: "a", 8: "b", 9: "c"}))
    summary = tables["summary"].first().asDict()
    assignment = after_counts(six_brokers, tables["reassignment"])
    replicas = Counter(b for r in assignment.values() for b in r)
    leaders = Counter(r[0] for r in assignment.values())
    assert set(replicas) == set(range(1, 10))
    assert all(count == 200 for count in replicas.values())                 # 1800 / 9
    assert all(abs(count - 600 / 9) < 1 for count in leaders.values())       # 66 or 67
    racks = {**SIX, 7: "a", 8: "b", 9: "c"}
    assert all(len({racks[b] for b in r}) == 3 for r in assignment.values())
    assert summary["moves_lower_bound"] == 600
    assert summary["replicas_moved"] <= 600 * 1.05
    assert (summary["rack_violations_before"], summary["rack_violations_after"]) == (0, 0)
    assert summary["replica_skew_before"] == pytest.approx(1.5) and summary["replica_skew_after"] == 1.0
    assert summary["preferred_leader_skew_after"] < 1.02
    # Bytes moved: each added replica copies its partition's size.
    before = {(r.topic, r.partition): (set(r.replicas), r.size_bytes) for r in six_brokers.partitions.collect()}
    assert summary["bytes_moved"] == sum(len(set(r) - before[k][0]) * before[k][1] for k, r in assignment.items())
    brokers = {r.broker_id: r for r in tables["brokers"].collect()}
    assert brokers[7].replicas_before == 0 and brokers[7].replicas_after == 200 and brokers[7].rack == "a"


def test_removing_a_broker_empties_it(six_brokers):
    tables = planner.plan_tables(six_brokers.brokers, six_brokers.partitions, Change(remove=(6,)))
    assignment = after_counts(six_brokers, tables["reassignment"])
    replicas = Counter(b for r in assignment.values() for b in r)
    assert 6 not in replicas and sum(replicas.values()) == 1800
    summary = tables["summary"].first()
    # Broker 6 holds 300; the other five end at 360 each, which they reach only with broker 6's replicas.
    assert summary.replicas_moved == summary.moves_lower_bound == 300
    # Rack c is left with broker 3 alone: every partition keeps a replica there.
    assert replicas[3] == 600 and summary.rack_violations_after == 0


@pytest.mark.parametrize("change, message", [
    (Change(remove=(42,)), "cannot remove broker(s) 42: not in the export"),
    (Change(add=(7,)), "broker(s) 7 have no rack while others do"),
    (Change(add=(7,), remove=(7,)), "both added and removed"),
    (Change(remove=(1, 2, 3, 4)), "a replication factor of 3 needs at least 3 brokers; the target set has 2"),
])
def test_impossible_targets_are_one_line_errors(six_brokers, change, message):
    with pytest.raises(PlanInputError) as exc:
        planner.plan_tables(six_brokers.brokers, six_brokers.partitions, change)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_main_writes_a_reassignment_the_cli_reads(spark, six_brokers, tmp_path, capsys):
    from replog.cli import plan_files
    from replog.spark.main import build_parser

    out = tmp_path / "plan.json"
    args = build_parser().parse_args([
        "plan", "--export", six_brokers.origin, "--add-brokers", "7,8,9", "--racks", "7:a,8:b,9:c",
        "--out", str(out), "--summary-out", str(tmp_path / "summary.json"), "--chart", str(tmp_path / "plan.png")])
    assert planner.run(spark, args) == 0
    plan = json.loads(out.read_text())
    assert plan["version"] == 1 and plan["partitions"]
    entries = plan_files.read_reassignment(str(out))          # what `replog reassign execute` reads
    assert len(entries) == len(plan["partitions"]) == json.loads((tmp_path / "summary.json").read_text())[
        "summary"]["partitions_changed"]
    assert all(len(set(replicas)) == 3 for _, _, replicas in entries)
    assert (tmp_path / "plan.png").read_bytes()[:4] == b"\x89PNG"
    assert "moves_lower_bound" in capsys.readouterr().out
