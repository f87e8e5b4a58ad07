"""A log holding batches of the previous format, batches with headers and LogAppendTime batches side by
side: appended, replicated to a follower's log, verified, reopened and searched by timestamp."""

from __future__ import annotations

from replog.common.records import (
    TimestampType,
    decode_records,
    encode_batch,
    validate_batch,
    with_log_append_time,
)
from tests.unit.common.test_record_headers import PREVIOUS_FORMAT_BATCH  # three records: T0, T0 + 5, T0 - 10

T0_MS = 1_700_000_000_000
APPENDED_AT_MS = T0_MS + 60_000


def fill(log) -> None:
    log.append_as_leader(PREVIOUS_FORMAT_BATCH, 0)
    log.append_as_leader(encode_batch([(b"k", b"with", T0_MS + 10, [("trace", b"1"), ("null", None)])]), 0)
    plain = encode_batch([(None, b"stamped", T0_MS + 20, [("h", b"x")]), (None, b"also", T0_MS + 30)])
    stamped, header = with_log_append_time(plain, validate_batch(plain), APPENDED_AT_MS)
    log.append_as_leader(stamped, 0, validated=header)


def described(log) -> list[tuple]:
    return [(r.offset, r.value, r.timestamp_ms, r.timestamp_type, r.headers)
            for r in decode_records(log.read(0, 10**9))]


EXPECTED = [
    (0, b"first", T0_MS, TimestampType.CREATE_TIME, ()),
    (1, b"second", T0_MS + 5, TimestampType.CREATE_TIME, ()),
    (2, b"", T0_MS - 10, TimestampType.CREATE_TIME, ()),
    (3, b"with", T0_MS + 10, TimestampType.CREATE_TIME, (("trace", b"1"), ("null", None))),
    (4, b"stamped", APPENDED_AT_MS, TimestampType.LOG_APPEND_TIME, (("h", b"x"),)),
    (5, b"also", APPENDED_AT_MS, TimestampType.LOG_APPEND_TIME, ()),
]


def test_every_kind_of_batch_reads_back_after_a_reopen_and_verifies(logs):
    log = logs.open()
    fill(log)
    assert described(log) == EXPECTED
    log.close()
    log = logs.open()
    assert log.recovery_report is None or log.recovery_report.bytes_dropped == 0
    assert log.verify() == []
    assert described(log) == EXPECTED


def test_a_follower_appends_the_leaders_bytes_as_they_are(logs, tmp_path):
    leader = logs.open()
    fill(leader)
    logs.directory = tmp_path / "follower-0"
    follower = logs.open()
    follower.append_as_follower(leader.read(0, 10**9))
    assert described(follower) == EXPECTED
    assert follower.verify() == []


def test_a_timestamp_search_finds_log_append_time_records_by_the_leaders_clock(logs):
    log = logs.open()
    fill(log)
    assert log.offset_for_timestamp(T0_MS + 10) == (3, T0_MS + 10)
    assert log.offset_for_timestamp(T0_MS + 11) == (4, APPENDED_AT_MS)  # not by the producer's T0 + 20
    assert log.offset_for_timestamp(APPENDED_AT_MS + 1) is None
