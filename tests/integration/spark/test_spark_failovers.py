"""The failover report on hand-written trace files whose durations are known."""

from __future__ import annotations

import json

import pytest

from replog.spark import failovers, traces

from tests.integration.spark.trace_files import broker_failure, span, write_jsonl, write_otlp

pytestmark = pytest.mark.integration
T0 = 1_800_000_000_000.0  # ms


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    """Two broker failures (100 and 1000 partitions), a controlled shutdown (in OTLP JSON),
    a controller failover, and two traces that are not failovers."""
    d = tmp_path_factory.mktemp("traces")
    # A: decide 10, ZooKeeper 30, requests 20 + 30 = 50 (to brokers 1, 2); broker 2 answers until +110.
    a_ctl, a_brk = broker_failure(1, T0, partitions=100, decide_ms=10, zookeeper_ms=30,
                                  sends=[(1, 20), (2, 30)], broker_spans=[(2, 70, 110), (1, 45, 50)])
    # D: 1000 partitions, decide 10, ZooKeeper 100, requests 100; nothing after the requests.
    d_ctl, _ = broker_failure(4, T0 + 60_000, partitions=1000, decide_ms=10, zookeeper_ms=100,
                              sends=[(1, 100)], broker_spans=[], dead=[2])
    # C: controller 2 takes the seat: load state 20, decide 5, ZooKeeper 10, requests 10; 50 ms in all.
    c_root = span(3, "controller.failover", T0 + 30_000, T0 + 30_050, instance="2", **{
        "controller.id": 2, "controller.epoch": 3, "zookeeper.session_timeout_ms": 6000, "partitions": 50})
    c = [c_root, span(3, "controller.load_state", T0 + 30_000, T0 + 30_020, c_root, instance="2"),
         span(3, "controller.decide", T0 + 30_020, T0 + 30_025, c_root, instance="2"),
         span(3, "controller.zookeeper_write", T0 + 30_025, T0 + 30_035, c_root, instance="2"),
         span(3, "controller.send_requests", T0 + 30_035, T0 + 30_045, c_root, instance="2")]
    # Not failovers: a broker joining, a topic creation.
    join = span(5, "controller.broker_change", T0 + 1000, T0 + 1010, **{"brokers.dead": [], "brokers.new": [4]})
    topic = span(6, "controller.topic_change", T0 + 2000, T0 + 2010)
    write_jsonl(d / "replog-controller-1.jsonl", [*a_ctl, *d_ctl, join, topic])
    write_jsonl(d / "replog-controller-2.jsonl", c)
    write_jsonl(d / "replog-broker-2.jsonl", [s for s in a_brk if s["resource"]["service.instance.id"] == "2"])
    write_jsonl(d / "replog-broker-1.jsonl", [s for s in a_brk if s["resource"]["service.instance.id"] == "1"])
    (d / "replog-broker-3.jsonl").write_text("")  # a process that exported nothing
    # B, in OTLP JSON: controlled shutdown of broker 2, 10 partitions, decide 1, ZooKeeper 2, requests 3.
    # Its controller span has a parent in the broker that asked (not in these files).
    b_root = span(2, "controller.controlled_shutdown", T0 + 20_000, T0 + 20_010, {"span_id": "00000000000000ff"}, **{
        "broker.id": 2, "partitions.affected": 10, "controller.epoch": 2, "event.queue_time_ms": 0.5})
    b = [b_root, span(2, "controller.decide", T0 + 20_000, T0 + 20_001, b_root),
         span(2, "controller.zookeeper_write", T0 + 20_001, T0 + 20_003, b_root),
         span(2, "controller.send_requests", T0 + 20_003, T0 + 20_006, b_root)]
    write_otlp(d / "otlp" / "collector.json", b)
    return d


@pytest.fixture(scope="module")
def spans(spark, trace_dir):
    spans = traces.read_spans(spark, [str(trace_dir)]).cache()
    yield spans
    spans.unpersist()


@pytest.fixture(scope="module")
def table_frame(spans):
    frame = failovers.failover_table(spans).cache()
    yield frame
    frame.unpersist()


@pytest.fixture(scope="module")
def table(table_frame):
    return {r.trace_id[-1]: r.asDict() for r in table_frame.collect()}


def test_one_row_per_failover_and_nothing_else(table):
    assert {k: v["kind"] for k, v in table.items()} == {
        "1": "broker_failure", "2": "controlled_shutdown", "3": "controller_failover", "4": "broker_failure"}


def test_broker_failure_phases(table):
    a = table["1"]
    assert a["detection_ms"] == 6000 and a["detection_source"] == "inferred" and a["detection_measured_ms"] is None
    assert a["queue_ms"] == pytest.approx(5)
    assert (a["decide_ms"], a["zookeeper_write_ms"], a["send_requests_ms"]) == pytest.approx((10, 30, 50))
    assert (a["zookeeper_transactions"], a["zookeeper_ops"], a["zookeeper_bytes"]) == (2, 100, 5000)
    assert (a["requests"], a["brokers_contacted"], a["leader_and_isr_partitions"]) == (2, 2, 200)
    # Broker 2's become_leader ends at +110; the fan-out started at +40.
    assert a["slowest_broker"] == 2 and a["slowest_broker_ms"] == pytest.approx(70)
    assert a["broker_tail_ms"] == pytest.approx(20)
    assert a["handling_ms"] == pytest.approx(110)
    assert a["total_ms"] == pytest.approx(6000 + 5 + 110)
    assert a["brokers_dead"] == [3] and a["partitions_affected"] == 100


def test_controlled_shutdown_from_otlp_has_nothing_to_detect(table):
    b = table["2"]
    assert (b["detection_ms"], b["detection_source"]) == (0, "requested")
    assert (b["decide_ms"], b["zookeeper_write_ms"], b["send_requests_ms"]) == pytest.approx((1, 2, 3))
    assert b["handling_ms"] == pytest.approx(10) and b["total_ms"] == pytest.approx(10.5)
    assert b["subject_id"] == 2 and b["partitions_affected"] == 10


def test_controller_failover(table):
    c = table["3"]
    assert c["load_state_ms"] == pytest.approx(20) and c["handling_ms"] == pytest.approx(50)
    assert (c["detection_ms"], c["detection_source"], c["queue_ms"]) == (6000, "inferred", 0)


def test_known_death_times_make_detection_measured(spark, spans, tmp_path):
    deaths = tmp_path / "deaths.jsonl"
    deaths.write_text("\n".join(json.dumps(d) for d in [
        {"role": "broker", "id": 3, "died_at_ms": int(T0 - 5 - 4000)},     # A: noticed at T0 - 5
        {"role": "broker", "id": 3, "died_at_ms": int(T0 - 90_000)},       # an earlier death: not this one
        {"role": "controller", "id": 1, "died_at_ms": int(T0 + 30_000 - 2500)},
    ]) + "\n")
    rows = {r.trace_id[-1]: r for r in failovers.failover_table(spans, failovers.read_deaths(spark, str(deaths)))
            .collect()}
    assert (rows["1"].detection_ms, rows["1"].detection_source, rows["1"].detection_inferred_ms) == (4000, "measured",
                                                                                                     6000)
    assert rows["1"].total_ms == pytest.approx(4000 + 5 + 110)
    assert (rows["3"].detection_ms, rows["3"].detection_source) == (2500, "measured")
    assert rows["4"].detection_source == "inferred"


def test_percentiles_and_trend(table_frame):
    table = table_frame
    pct = {(r.kind, r.metric): r for r in failovers.percentiles(table).collect()}
    handling = pct[("broker_failure", "handling_ms")]
    # Handling 110 and 210 ms: exact percentiles interpolate linearly.
    assert (handling.failovers, handling.p50_ms, handling.p90_ms, handling.max_ms) == pytest.approx((2, 160, 200, 210))
    assert ("controller_failover", "load_state_ms") in pct and ("broker_failure", "load_state_ms") not in pct
    trend = [r for r in failovers.trend_by_partitions(table).collect() if r.kind == "broker_failure"]
    assert [(r.partitions_from, r.failovers) for r in trend] == [(100, 1), (1000, 1)]
    # (100 partitions, 110 ms) and (1000, 210): 100 ms more per 900 partitions.
    assert trend[0].handling_ms_per_1000_partitions == pytest.approx(1000 * 100 / 900)


def test_main_prints_tables_and_draws_the_timeline(spark, trace_dir, tmp_path, capsys):
    from replog.spark.main import build_parser

    out = tmp_path / "out"
    args = build_parser().parse_args(["failovers", "--traces", str(trace_dir), "--out", str(out)])
    assert failovers.run(spark, args) == 0
    printed = capsys.readouterr().out
    assert "broker_failure" in printed and "Percentiles across failovers" in printed
    png = (out / "failover_timeline.png").read_bytes()
    assert png[:4] == b"\x89PNG" and len(png) > 5000
    assert list((out / "failovers.parquet").glob("*.parquet"))
