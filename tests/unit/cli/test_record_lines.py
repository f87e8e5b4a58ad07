"""`replog produce` input lines and `replog consume` output lines (replog.cli.record_lines)."""

from __future__ import annotations

import pytest

from replog.cli.record_lines import (
    LineError,
    parse_header_argument,
    parse_line,
    parse_timestamp,
    record_as_json,
    record_as_text,
)
from replog.client import ConsumerRecord, TimestampType


def test_header_arguments_split_at_the_first_equals_sign():
    assert parse_header_argument("trace=a=b") == ("trace", b"a=b")
    assert parse_header_argument("empty=") == ("empty", b"")
    for bad in ("no-equals", "=value"):
        with pytest.raises(LineError, match="expected KEY=VALUE"):
            parse_header_argument(bad)


def test_a_text_line_is_a_value_or_a_key_and_a_value_and_takes_the_header_arguments():
    assert parse_line("k:v:w", "text", ":", [("h", b"1")]) == (b"k", b"v:w", [("h", b"1")], None)
    assert parse_line("plain", "text", None, []) == (None, b"plain", [], None)


def test_a_json_line_carries_key_value_headers_and_timestamp():
    line = '{"key": "k", "value": "v", "headers": {"a": "1", "n": null}, "timestamp_ms": 1700000000000}'
    assert parse_line(line, "json", None, [("extra", b"x")]) == (
        b"k", b"v", [("a", b"1"), ("n", None), ("extra", b"x")], 1_700_000_000_000)
    repeated = '{"value": "v", "headers": [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]}'
    assert parse_line(repeated, "json", None, []) == (None, b"v", [("a", b"1"), ("a", b"2")], None)


@pytest.mark.parametrize("line, message", [
    ("not json", "not JSON"),
    ("[1]", "expected a JSON object"),
    ('{"key": "k"}', "'value' must be a string"),
    ('{"value": "v", "colour": "red"}', "unknown field\\(s\\) colour; a line may hold key, value, headers"),
    ('{"value": "v", "key": 3}', "'key' must be a string or null"),
    ('{"value": "v", "timestamp_ms": "soon"}', "'timestamp_ms' must be an integer"),
    ('{"value": "v", "headers": "a=1"}', "'headers' must be an object"),
    ('{"value": "v", "headers": {"": "1"}}', "a header key must be a non-empty string"),
    ('{"value": "v", "headers": {"a": 1}}', "the value of header 'a' must be a string or null"),
])
def test_a_bad_json_line_says_what_is_wrong(line, message):
    with pytest.raises(LineError, match=message):
        parse_line(line, "json", None, [])


def test_timestamps_are_milliseconds_or_iso_8601():
    assert parse_timestamp("1700000000000") == 1_700_000_000_000
    assert parse_timestamp("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_timestamp("2023-11-14T22:13:20") == 1_700_000_000_000  # no offset: UTC
    assert parse_timestamp("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    with pytest.raises(LineError, match="expected milliseconds since the Unix epoch or an ISO 8601"):
        parse_timestamp("yesterday")


RECORD = ConsumerRecord("orders", 2, 41, b"k", b"\x00hi", 1_700_000_000_000, (("a", b"1"), ("n", None)),
                        TimestampType.LOG_APPEND_TIME)


def test_text_output_prints_the_fields_asked_for_in_kafkas_order():
    assert record_as_text(RECORD, value_format="text", timestamp=True, offset=True, headers=True, key=True) == (
        "LogAppendTime:1700000000000\t2:41\ta:1,n:null\tk\t\x00hi")
    assert record_as_text(RECORD, value_format="hex", timestamp=False, offset=False, headers=True, key=False) == (
        "a:31,n:null\t006869")
    plain = ConsumerRecord("orders", 0, 0, None, b"v", 5)
    assert record_as_text(plain, value_format="base64", timestamp=True, offset=False, headers=True, key=False) == (
        "CreateTime:5\tNO_HEADERS\tdg==")


def test_json_output_holds_every_field():
    assert record_as_json(RECORD, "base64") == {
        "partition": 2, "offset": 41, "timestamp_ms": 1_700_000_000_000, "timestamp_type": "LogAppendTime",
        "key": "k", "headers": [{"key": "a", "value": "MQ=="}, {"key": "n", "value": None}], "value": "AGhp"}


def test_keys_and_values_round_trip_in_hex_and_base64_both_ways():
    binary_key, binary_value = bytes(range(250, 256)) + b"\x00", b"\xff\xfe\x00value"
    record = ConsumerRecord("t", 0, 5, binary_key, binary_value, 1, (("h", b"\x01"),), TimestampType.CREATE_TIME)
    for data_format in ("hex", "base64"):
        line = record_as_text(record, value_format=data_format, timestamp=False, offset=False, headers=False,
                              key=True, key_format=data_format)
        key_text, value_text = line.split("\t")
        assert parse_line(f"{key_text}:{value_text}", "text", ":", [], key_format=data_format,
                          value_format=data_format)[:2] == (binary_key, binary_value)
        as_json = record_as_json(record, data_format, data_format)
        import json

        line = json.dumps({k: as_json[k] for k in ("key", "value", "headers")})
        assert parse_line(line, "json", None, [], key_format=data_format, value_format=data_format)[:3] == (
            binary_key, binary_value, [("h", b"\x01")])


def test_a_key_that_is_not_hex_is_a_line_error():
    with pytest.raises(LineError, match="the key 'zz' is not hex"):
        parse_line("zz:00", "text", ":", [], key_format="hex", value_format="hex")
    with pytest.raises(LineError, match="not base64"):
        parse_line("!!!", "text", None, [], value_format="base64")
