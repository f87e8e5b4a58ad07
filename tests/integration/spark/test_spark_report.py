"""The topology report on small synthetic exports whose answers are known by construction."""

from __future__ import annotations

import pytest

from replog.spark import inputs, report, synthetic

pytestmark = pytest.mark.integration

RACKS = {1: "a", 2: "b", 3: "c", 4: "a"}


def skewed_export(path, fmt="parquet"):
    """4 brokers in racks a, b, c, a (broker 5 named in an assignment but not registered).

    t-0: [1,2,3] leader 1   t-1: [1,2,4] leader 2 (not preferred; racks a,b,a: a violation)
    t-2: [1,4,3] leader 1 ISR [1] (under-replicated, under min ISR 2; racks a,a,c: a violation)
    u-0: [2,3]   leader -1 (offline, under-replicated, under min ISR)
    u-1: [5,1]   leader 5, broker 5 has no rack (one rack spanned of min(2, 3): a violation)
    """
    partitions = {
        "topic": ["t", "t", "t", "u", "u"],
        "partition": [0, 1, 2, 0, 1],
        "replicas": [[1, 2, 3], [1, 2, 4], [1, 4, 3], [2, 3], [5, 1]],
        "leader": [1, 2, 1, -1, 5],
        "isr": [[1, 2, 3], [1, 2, 4], [1], [], [5, 1]],
        "under_replicated": [False, False, True, True, False],
        "unavailable": [False, False, False, True, False],
        "under_min_isr": [False, False, True, True, False],
        "min_insync_replicas": [2, 2, 2, 2, 1],
        "size_bytes": [100, 200, 300, 400, 500],
    }
    brokers = {"broker_id": [1, 2, 3, 4, 5], "rack": ["a", "b", "c", "a", None],
               "host": ["h", "h", "h", "h", None], "port": [1, 2, 3, 4, None],
               "alive": [True, True, True, True, False]}
    return synthetic.write_export(path, brokers, partitions, fmt=fmt)


@pytest.mark.parametrize("fmt", ["parquet", "ndjson"])
def test_known_answers_per_broker_topic_and_cluster(spark, tmp_path, fmt):
    topology = inputs.read_export(spark, str(skewed_export(tmp_path / "export", fmt)))
    tables = report.report(topology.brokers, topology.partitions)

    brokers = {r.broker_id: r.asDict() for r in tables["brokers"].collect()}
    assert {b: (r["leaders"], r["replicas"]) for b, r in brokers.items()} == {
        1: (2, 4), 2: (1, 3), 3: (0, 3), 4: (0, 2), 5: (1, 1)}
    # Broker 1 is preferred for t-0, t-1, t-2 and leads t-0 and t-2.
    assert brokers[1]["preferred_leaders"] == 3 and brokers[1]["preferred_leader_share"] == pytest.approx(2 / 3)
    assert brokers[4]["preferred_leader_share"] is None
    assert brokers[1]["bytes"] == 100 + 200 + 300 + 500 and brokers[3]["bytes"] == 100 + 300 + 400
    assert brokers[5]["rack"] is None and brokers[5]["alive"] is False

    topics = {r.topic: r.asDict() for r in tables["topics"].collect()}
    assert (topics["t"]["partitions"], topics["t"]["replication_factor"], topics["t"]["under_replicated"],
            topics["t"]["offline"], topics["t"]["under_min_isr"], topics["t"]["rack_violations"],
            topics["t"]["non_preferred_leaders"]) == (3, 3, 1, 0, 1, 2, 1)
    assert (topics["u"]["partitions"], topics["u"]["replication_factor"], topics["u"]["offline"],
            topics["u"]["rack_violations"], topics["u"]["non_preferred_leaders"]) == (2, 2, 1, 1, 0)

    cluster = tables["cluster"].first().asDict()
    # Leaders 2,1,0,0,1 over 5 brokers: mean 0.8, max 2. Replicas 4,3,3,2,1: mean 2.6, max 4.
    assert cluster["leader_skew"] == pytest.approx(2 / 0.8)
    assert cluster["replica_skew"] == pytest.approx(4 / 2.6)
    assert (cluster["brokers"], cluster["alive_brokers"], cluster["racks"], cluster["partitions"],
            cluster["replicas"]) == (5, 4, 3, 5, 13)
    assert (cluster["rack_violations"], cluster["non_preferred_leaders"], cluster["under_replicated"],
            cluster["offline"], cluster["under_min_isr"]) == (3, 1, 2, 1, 2)
    violations = [(r.topic, r.partition) for r in tables["rack_violations"].collect()]
    assert violations == [("t", 1), ("t", 2), ("u", 1)]


def test_a_balanced_round_robin_cluster_has_skew_one_and_no_violation(spark, tmp_path):
    racks = {b: "abc"[(b - 1) % 3] for b in range(1, 7)}
    columns = synthetic.round_robin(racks, topics=3, partitions_per_topic=20, replication_factor=3)
    path = synthetic.write_export(tmp_path / "export", {"broker_id": list(racks), "rack": list(racks.values())},
                                  columns)
    topology = inputs.read_export(spark, str(path))
    cluster = report.report(topology.brokers, topology.partitions)["cluster"].first()
    assert (cluster.leader_skew, cluster.replica_skew, cluster.rack_violations) == (1.0, 1.0, 0)
    assert cluster.bytes is None  # sizes unknown (-1): no bytes, not zero bytes


def test_no_racks_means_no_rack_violation(spark, tmp_path):
    columns = {"topic": ["t", "t"], "partition": [0, 1], "replicas": [[1, 2], [2, 1]]}
    path = synthetic.write_export(tmp_path / "export", {"broker_id": [1, 2]}, columns)
    topology = inputs.read_export(spark, str(path))
    assert report.report(topology.brokers, topology.partitions)["cluster"].first().rack_violations == 0


def test_main_writes_tables_and_charts(spark, tmp_path, capsys):
    from replog.spark.main import build_parser

    export = skewed_export(tmp_path / "export")
    out = tmp_path / "report"
    args = build_parser().parse_args(["report", "--export", str(export), "--out", str(out)])
    assert report.run(spark, args) == 0
    printed = capsys.readouterr().out
    assert "leader_skew" in printed and "Brokers (most leaders first)" in printed
    for table in ("cluster", "brokers", "topics", "rack_violations"):
        assert list((out / f"{table}.parquet").glob("*.parquet")), table
        csv = next((out / f"{table}.csv").glob("*.csv")).read_text()
        assert csv.splitlines()[0].split(",")[0] in ("brokers", "broker_id", "topic")
    assert "1 2 4" in next((out / "rack_violations.csv").glob("*.csv")).read_text()
    for chart in ("leaders_replicas_per_broker.png", "bytes_per_broker.png"):
        data = (out / chart).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_group_lag_per_group_from_the_group_offsets_table(spark, tmp_path, capsys):
    """billing: lags 3 and 0 and one partition whose log end is unknown; audit: lag 9 on one partition."""
    from replog.spark.main import build_parser

    columns = {"topic": ["t", "t"], "partition": [0, 1], "replicas": [[1, 2], [2, 1]]}
    group_offsets = {"group": ["billing", "billing", "billing", "audit"], "topic": ["t", "t", "u", "t"],
                     "partition": [0, 1, 0, 0], "committed_offset": [7, 10, 4, 1],
                     "log_end_offset": [10, 10, -1, 10], "lag": [3, 0, -1, 9]}
    groups = {"group": ["audit", "billing"], "state": ["Empty", "Stable"], "generation": [1, 4], "members": [0, 2],
              "coordinator": [1, 2]}
    path = synthetic.write_export(tmp_path / "export", {"broker_id": [1, 2]}, columns, groups=groups,
                                  group_offsets=group_offsets)
    topology = inputs.read_export(spark, str(path))
    assert [r.asDict() for r in report.group_lag(topology.group_offsets).collect()] == [
        {"group": "audit", "partitions": 1, "lag": 9, "lag_max": 9, "lag_unknown": 0},
        {"group": "billing", "partitions": 3, "lag": 3, "lag_max": 3, "lag_unknown": 1}]
    assert topology.groups.count() == 2

    args = build_parser().parse_args(["report", "--export", str(path)])
    assert report.run(spark, args) == 0
    printed = capsys.readouterr().out
    assert "Consumer groups (most lag first)" in printed and "billing" in printed
