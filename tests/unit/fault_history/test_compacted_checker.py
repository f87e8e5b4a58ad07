"""The compaction-aware checker on hand-made histories of a compacted topic: superseded records and
tombstones past delete.retention.ms may be gone, nothing else acknowledged may, and the other rules
(duplicates, order, reads, replicas) still hold."""

from __future__ import annotations

from tests.fault.history import checker
from tests.fault.history.compacted import PAD, keyed_log
from tests.fault.history.history import Fail, Invoke, Ok, Read, record_value

TP = ("t", 0)
RETENTION_S = 100.0


def keyed(seq: int, key: bytes, offset: int, *, tombstone: bool = False, at_s: float = 1.0) -> list:
    return [Invoke(at_s - 0.5, 0, seq, *TP, key, tombstone), Ok(at_s, 0, seq, offset)]


def held(seq: int, key: bytes, *, tombstone: bool = False) -> tuple[bytes, bytes | None]:
    return key, None if tombstone else record_value(0, seq)


def judge(events: list, log: checker.KeyedLog, read_at_s: float = 10.0) -> checker.Report:
    return checker.check_compacted(events, {TP: log}, checker.Compaction(RETENTION_S, read_at_s))


def test_a_record_superseded_by_a_later_acknowledged_record_of_its_key_may_be_gone():
    events = [*keyed(0, b"a", 0), *keyed(1, b"b", 1), *keyed(2, b"a", 2)]
    report = judge(events, {1: held(1, b"b"), 2: held(2, b"a")})
    assert report.violations == []
    assert report.acknowledged == 3


def test_a_superseded_record_not_cleaned_yet_may_stay():
    events = [*keyed(0, b"a", 0), *keyed(1, b"a", 1)]
    assert judge(events, {0: held(0, b"a"), 1: held(1, b"a")}).violations == []


def test_the_latest_record_of_a_key_gone_is_lost():
    events = [*keyed(0, b"a", 0), *keyed(1, b"a", 1), *keyed(2, b"b", 2)]
    report = judge(events, {0: held(0, b"a"), 2: held(2, b"b")})
    assert [v.rule for v in report.violations] == ["lost"]
    assert "b'p0-s1' of key b'a' acknowledged at offset 1" in report.violations[0].evidence


def test_a_record_superseded_only_by_an_unacknowledged_send_is_lost_when_gone():
    events = [*keyed(0, b"a", 0), Invoke(1.0, 0, 1, *TP, b"a", False), Fail(2.0, 0, 1, "timed out")]
    report = judge(events, {1: (b"a", record_value(0, 1))})
    assert report.count("lost") == 1


def test_a_record_of_another_key_superseding_nothing_is_lost():
    events = [*keyed(0, b"a", 0), *keyed(1, b"b", 1)]
    assert judge(events, {1: held(1, b"b")}).count("lost") == 1


def test_a_tombstone_may_be_gone_only_after_delete_retention():
    events = [*keyed(0, b"a", 0), *keyed(1, b"a", 1, tombstone=True, at_s=5.0), *keyed(2, b"b", 2)]
    log = {2: held(2, b"b")}
    assert judge(events, log, read_at_s=4.5 + RETENTION_S).violations == []
    early = judge(events, log, read_at_s=4.5 + RETENTION_S - 1)
    assert [v.rule for v in early.violations] == ["lost"]
    assert "tombstone of key b'a' acknowledged at offset 1" in early.violations[0].evidence


def test_a_tombstone_kept_is_held_with_no_value():
    events = [*keyed(0, b"a", 0, tombstone=True)]
    assert judge(events, {0: held(0, b"a", tombstone=True)}).violations == []
    assert judge(events, {0: (b"a", b"resurrected")}).count("lost") == 1


def test_an_offset_holding_another_record_is_lost_even_when_the_record_may_be_gone():
    events = [*keyed(0, b"a", 0), *keyed(1, b"a", 1)]
    report = judge(events, {0: held(1, b"a"), 1: held(1, b"a")})
    assert report.count("lost") == 1
    assert report.count("duplicated") == 1


def test_a_record_held_under_another_key_is_lost():
    assert judge([*keyed(0, b"a", 0)], {0: (b"b", record_value(0, 0))}).count("lost") == 1


def test_out_of_order_acknowledgements_are_still_reported():
    events = [*keyed(0, b"a", 1), *keyed(1, b"b", 0)]
    report = judge(events, {0: held(1, b"b"), 1: held(0, b"a")})
    assert [v.rule for v in report.violations] == ["out_of_order"]


def test_a_read_record_may_be_gone_only_when_compaction_could_drop_it():
    events = [*keyed(0, b"a", 0), *keyed(1, b"b", 1), *keyed(2, b"a", 2),
              Read(1.5, 0, *TP, 0, record_value(0, 0)), Read(1.5, 0, *TP, 1, record_value(0, 1))]
    assert judge(events, {1: held(1, b"b"), 2: held(2, b"a")}).violations == []
    report = judge(events[:-2] + [Read(1.5, 0, *TP, 1, record_value(0, 1))], {2: held(2, b"a")})
    assert sorted(v.rule for v in report.violations) == ["changed_after_read", "lost"]


def test_replicas_agree_on_every_offset_both_hold_whatever_each_dropped():
    leader = {1: held(1, b"b"), 2: held(2, b"a")}
    follower = {0: held(0, b"a"), 1: held(1, b"b"), 2: held(2, b"a")}
    assert checker.check_compacted_replicas(TP, {1: leader, 2: follower}) == []
    stray = {**follower, 1: held(5, b"b")}
    violations = checker.check_compacted_replicas(TP, {1: leader, 2: follower, 3: stray})
    assert [v.evidence.split(" hold ")[0] for v in violations] == ["brokers 1 and 3", "brokers 2 and 3"]
    assert "at 1 offsets (1: (b'b', b'p0-s1') vs (b'b', b'p0-s5'))" in violations[0].evidence


def test_a_keyed_log_drops_the_padding_and_keeps_tombstones():
    class Record:
        def __init__(self, offset, key, value):
            self.offset, self.key, self.value = offset, key, value

    log = keyed_log([Record(3, b"a", record_value(0, 7) + PAD * 20), Record(4, b"a", None)])
    assert log == {3: (b"a", b"p0-s7"), 4: (b"a", None)}
