"""The history checker on hand-made histories: a clean one passes, each violation is caught with
its evidence, and unavailability is the longest stretch without an acknowledged write."""

from __future__ import annotations

import json

from tests.fault.history import checker
from tests.fault.history.history import (
    ClientError,
    Fail,
    History,
    Indeterminate,
    Invoke,
    Mark,
    Ok,
    Read,
    record_value,
)
from tests.fault.history.session_expiry import session_password

TP = ("t", 0)


def sent(producer: int, seq: int, at_s: float = 0.0) -> Invoke:
    return Invoke(at_s, producer, seq, *TP)


def acked(producer: int, seq: int, offset: int, at_s: float = 1.0) -> list:
    return [sent(producer, seq, at_s - 0.5), Ok(at_s, producer, seq, offset)]


def log_of(*pairs: tuple[int, int]) -> dict[int, bytes]:
    return {offset: record_value(producer, seq) for offset, (producer, seq) in enumerate(pairs)}


def test_a_clean_history_has_no_violation_and_counts_what_was_acknowledged():
    events = [*acked(0, 0, 0), *acked(1, 0, 1), *acked(0, 1, 2), sent(1, 1), Fail(2.0, 1, 1, "timed out"),
              sent(0, 2), Indeterminate(3.0, 0, 2), Read(2.0, 0, *TP, 0, record_value(0, 0))]
    report = checker.check(events, {TP: log_of((0, 0), (1, 0), (0, 1))})
    assert report.violations == []
    assert report.acknowledged == 3
    assert (report.partitions[TP].failed, report.partitions[TP].indeterminate) == (1, 1)


def test_an_acknowledged_record_missing_from_its_offset_is_lost():
    events = [*acked(0, 0, 0), *acked(0, 1, 1)]
    report = checker.check(events, {TP: log_of((0, 0))})
    assert report.count("lost") == 1
    assert "b'p0-s1' acknowledged at offset 1" in str(report.violations[0])


def test_an_acknowledged_record_at_another_offset_is_lost_and_the_evidence_says_where():
    events = [*acked(0, 0, 0), *acked(0, 1, 1)]
    report = checker.check(events, {TP: log_of((0, 1), (0, 0))})
    assert report.count("lost") == 2
    assert "and the record at [1]" in str(report.violations[0])


def test_a_record_twice_in_the_log_is_duplicated_even_if_its_send_failed():
    events = [*acked(0, 0, 0), sent(0, 1), Fail(2.0, 0, 1, "timed out")]
    report = checker.check(events, {TP: log_of((0, 0), (0, 1), (0, 1))})
    assert [v.rule for v in report.violations] == ["duplicated"]
    assert "b'p0-s1' at offsets [1, 2]" in report.violations[0].evidence


def test_a_producers_acknowledged_records_out_of_send_order_are_reported():
    events = [*acked(0, 0, 1), *acked(0, 1, 0)]
    report = checker.check(events, {TP: log_of((0, 1), (0, 0))})
    assert report.count("out_of_order") == 1
    assert "seq 0 at offset 1 but the later seq 1 at offset 0" in report.violations[0].evidence


def test_a_read_record_that_the_final_log_no_longer_holds_changed_after_read():
    events = [sent(0, 0), Read(1.0, 0, *TP, 0, record_value(0, 0))]  # read, never acknowledged, then truncated
    report = checker.check(events, {TP: log_of((1, 5))})
    assert report.count("changed_after_read") == 1
    assert "final log holds b'p1-s5'" in report.violations[0].evidence


def test_two_reads_of_one_offset_that_disagree_changed_after_read():
    events = [Read(1.0, 0, *TP, 0, record_value(0, 0)), Read(2.0, 1, *TP, 0, record_value(2, 0))]
    report = checker.check(events, {TP: log_of((0, 0))})
    assert report.count("changed_after_read") == 1
    assert "then as b'p2-s0' by consumer 1" in report.violations[0].evidence


def test_a_consumer_error_is_reported():
    report = checker.check([ClientError(1.0, 0, "t", "OFFSET_OUT_OF_RANGE")], {TP: {}})
    assert [v.rule for v in report.violations] == ["client_error"]


def test_an_isr_member_differing_below_the_high_watermark_is_reported_but_not_above_it():
    final = log_of((0, 0), (0, 1))
    same_below = {**final, 2: b"uncommitted"}
    differs = {0: final[0], 1: b"other"}
    violations = checker.check_replicas(TP, 2, checker.log_digest(final, 2), {1: final, 2: same_below, 3: differs})
    assert [v.rule for v in violations] == ["replicas_differ"]
    assert "broker 3 differs from what the consumer read below the HW 2 at 1 offsets, against broker 1 " \
           "(1: b'other' vs b'p0-s1')" in violations[0].evidence


def test_replicas_that_all_differ_from_what_was_read_are_each_reported():
    final = log_of((0, 0), (0, 1))
    violations = checker.check_replicas(TP, 2, checker.log_digest(final, 2), {1: {0: final[0]}, 2: {}})
    assert [v.evidence.split()[1] for v in violations] == ["1", "2"]


def test_unavailability_is_the_longest_stretch_without_an_acknowledgement():
    events = [Mark(0.0, "load_start"), *acked(0, 0, 0, at_s=1.0), Mark(2.0, "fault"), *acked(0, 1, 1, at_s=2.5),
              *acked(0, 2, 2, at_s=9.0), Mark(8.0, "heal"), *acked(0, 3, 3, at_s=10.0), Mark(11.0, "load_stop")]
    report = checker.check(events, {TP: log_of((0, 0), (0, 1), (0, 2), (0, 3))})
    summary = report.partitions[TP]
    assert summary.unavailable_after_fault_s == 6.5  # 2.5 -> 9.0, although one record was acked after the fault
    assert summary.unavailable_overall_s == 6.5
    assert summary.resumed_after_heal_s == 1.0
    assert report.unavailable_after_fault_s == 6.5


def test_a_partition_that_never_takes_a_write_after_the_fault_is_unavailable_until_the_load_stops():
    events = [Mark(0.0, "load_start"), *acked(0, 0, 0, at_s=1.0), Mark(2.0, "fault"), Mark(3.0, "heal"),
              Mark(12.0, "load_stop")]
    summary = checker.check(events, {TP: log_of((0, 0))}).partitions[TP]
    assert (summary.unavailable_after_fault_s, summary.resumed_after_heal_s) == (10.0, 9.0)


def test_the_summary_table_has_the_issues_columns():
    report = checker.check([*acked(0, 0, 0)], {TP: {}})
    table = checker.format_table([checker.summary_row("kill-9", "leader", report)])
    lines = table.splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == list(checker.HEADER)
    assert [c.strip() for c in lines[2].strip("|").split("|")] == ["kill-9", "leader", "1", "1", "0", "0", "0.00"]


def test_the_history_dumps_as_json_lines(tmp_path):
    history = History()
    history.extend([sent(0, 0), Read(1.0, 0, *TP, 0, record_value(0, 0))])
    lines = history.dump(tmp_path / "h.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["Invoke", "Read"]
    assert json.loads(lines[1])["value"] == "p0-s0"


def test_a_sessions_password_is_zookeepers_java_random_of_its_id():
    # new java.util.Random(id ^ 0xB3415C00L).nextBytes(new byte[16]), printed by a JVM for these ids.
    assert session_password(0x1234).hex() == "3c18abe05b0e6182741d625d127c15b0"
    assert session_password(0x10001B6928E0001).hex() == "433f93459d7705b983176a86e2e5cac4"
