"""Reading failovers out of span files, as `replog trace` does."""

from __future__ import annotations

import json

from replog.cli import traces


def span(trace, span_id, parent, name, service, instance, start_ms, end_ms, **attributes):
    return {"trace_id": trace, "span_id": span_id, "parent_span_id": parent, "name": name, "kind": "INTERNAL",
            "start_ns": start_ms * 1_000_000, "end_ns": end_ms * 1_000_000, "status": "UNSET",
            "attributes": attributes, "events": [], "links": [],
            "resource": {"service.name": service, "service.instance.id": instance}}


def write(path, spans):
    path.write_text("".join(json.dumps(s) + "\n" for s in spans) + '{"torn": ')


def test_a_broker_change_trace_across_processes_is_one_failover(tmp_path):
    t = "ab" * 16
    write(tmp_path / "replog-controller-1.jsonl", [
        span(t, "r", None, "controller.broker_change", "replog-controller", "1", 1000, 1040,
             **{"brokers.dead": [3], "leader_elections": 120, "controller.epoch": 4}),
        span(t, "d", "r", "controller.decide", "replog-controller", "1", 1001, 1005),
        span(t, "w", "r", "controller.zookeeper_write", "replog-controller", "1", 1005, 1015),
        span(t, "s", "r", "controller.send_requests", "replog-controller", "1", 1015, 1040),
        span(t, "s1", "s", "controller.send.LeaderAndIsrRequest", "replog-controller", "1", 1015, 1030),
        span(t, "s2", "s", "controller.send.LeaderAndIsrRequest", "replog-controller", "1", 1015, 1038),
        span("cd" * 16, "x", None, "controller.alter_partition", "replog-controller", "1", 900, 901),
    ])
    write(tmp_path / "replog-broker-1.jsonl", [span(t, "b1", "s1", "broker.become_leader", "replog-broker", "1",
                                                     1016, 1029)])
    write(tmp_path / "replog-broker-2.jsonl", [span(t, "b2", "s2", "broker.become_leader", "replog-broker", "2",
                                                     1016, 1055)])
    spans = traces.read_spans(tmp_path)
    rows = traces.failovers(spans)
    assert len(rows) == 1
    row = rows[0]
    assert row["kind"] == "broker change" and row["brokers"] == [3] and row["partitions_moved"] == 120
    assert row["duration_ms"] == 55.0  # the slowest broker's span ends the failover
    assert row["brokers_reporting"] == ["1", "2"] and row["spans"] == 8
    roots = traces.build_trees(spans)[t]
    assert [s.name for s in roots] == ["controller.broker_change"]
    send = roots[0].children[2]
    assert [c.children[0].instance for c in send.children] == ["1", "2"]


def test_waterfall_draws_one_line_per_span(tmp_path, capsys):
    t = "ef" * 16
    write(tmp_path / "replog-controller-1.jsonl", [
        span(t, "r", None, "controller.controlled_shutdown", "replog-controller", "1", 0, 100, **{"broker.id": 2}),
        span(t, "c", "r", "controller.decide", "replog-controller", "1", 0, 10),
    ])
    ordered = [(s, d) for s, d in traces._walk(traces.build_trees(traces.read_spans(tmp_path))[t][0])]
    traces.draw_waterfall(ordered)
    out = capsys.readouterr().out
    assert "2 spans, 100.0 ms" in out
    assert "controller.controlled_shutdown" in out and "  controller.decide" in out
    assert out.count("█") > 5


def test_a_failed_span_is_drawn_failed_with_its_error_type(tmp_path, capsys):
    t = "aa" * 16
    failed = span(t, "c", "r", "replog.v1.BrokerControlService/LeaderAndIsr", "replog-controller", "1", 10, 90,
                  **{"error.type": "UNAVAILABLE"})
    failed["status"] = "ERROR"
    write(tmp_path / "replog-controller-1.jsonl", [
        span(t, "r", None, "controller.failover", "replog-controller", "1", 0, 100), failed])
    ordered = [(s, d) for s, d in traces._walk(traces.build_trees(traces.read_spans(tmp_path))[t][0])]
    assert [s.status for s, _ in ordered] == ["UNSET", "ERROR"]
    traces.draw_waterfall(ordered)
    assert "failed: UNAVAILABLE" in capsys.readouterr().out


def test_replog_trace_reads_span_files_without_any_certificate(tmp_path, monkeypatch, capsys):
    """A host with span files and no TLS files at all (no .state/tls, no REPLOG_TLS_*): the command only reads files."""
    from replog.cli.main import main

    for name in ("REPLOG_TLS_CA_FILE", "REPLOG_TLS_CERT_FILE", "REPLOG_TLS_KEY_FILE", "REPLOG_INSECURE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REPLOG_STATE_DIR", str(tmp_path / "no-cluster-here"))
    t = "bb" * 16
    write(tmp_path / "replog-controller-1.jsonl", [
        span(t, "r", None, "controller.broker_change", "replog-controller", "1", 0, 100, **{"brokers.dead": [2]})])
    assert main(["trace", "--trace-dir", str(tmp_path), "failovers"]) == 0
    assert t in capsys.readouterr().out
