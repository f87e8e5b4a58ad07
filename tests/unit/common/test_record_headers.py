"""Record headers and timestamp types in the batch format: round trips, the previous format still
read, the leader's LogAppendTime stamp, and the bounds validation puts on headers."""

from __future__ import annotations

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.common.records import (
    ATTRIBUTE_LOG_APPEND_TIME,
    ATTRIBUTE_RECORD_HEADERS,
    HEADER_KEY_BYTES_MAX,
    HEADER_SIZE,
    RECORD_HEADERS_MAX,
    BatchBuilder,
    CorruptRecordError,
    DecodedRecord,
    TimestampType,
    decode_records,
    encode_batch,
    read_header,
    validate_batch,
    with_log_append_time,
    with_offset_and_epoch,
)
from replog.common.records.batch import CRC_COVERED, PREFIX

T0_MS = 1_700_000_000_000

# A batch built by the builder as it was before headers existed (commit 99c7dd4): base offset 40,
# leader epoch 3, producer 7 epoch 1 sequence 12, three records: (b"k1", b"first", T0),
# (None, b"second", T0 + 5), (b"", b"", T0 - 10). Kept as bytes so that no later change of the
# builder can change what this test reads.
PREVIOUS_FORMAT_BATCH = bytes.fromhex(
    "00000000000000280000007a000000030211bcfdf90000000000020000018bcfe568000000018bcfe5680500000000"
    "0000000700010000000c00000003000000000000000000000000000000026b31000000056669727374000000010000"
    "000000000005ffffffff000000067365636f6e6400000002fffffffffffffff60000000000000000"
)


def test_a_batch_of_the_previous_format_still_validates_and_reads():
    header = validate_batch(PREVIOUS_FORMAT_BATCH)
    assert header.attributes == 0 and header.base_offset == 40 and header.producer_id == 7
    assert decode_records(PREVIOUS_FORMAT_BATCH) == [
        DecodedRecord(40, b"k1", b"first", T0_MS),
        DecodedRecord(41, None, b"second", T0_MS + 5),
        DecodedRecord(42, b"", b"", T0_MS - 10),
    ]
    assert all(r.headers == () and r.timestamp_type is TimestampType.CREATE_TIME
               for r in decode_records(PREVIOUS_FORMAT_BATCH))


def test_records_without_headers_are_built_byte_for_byte_as_before():
    rebuilt = encode_batch([(b"k1", b"first", T0_MS), (None, b"second", T0_MS + 5), (b"", b"", T0_MS - 10)],
                           base_offset=40, leader_epoch=3, producer_id=7, producer_epoch=1, base_sequence=12)
    assert rebuilt == PREVIOUS_FORMAT_BATCH


def test_headers_round_trip_with_null_values_repeated_keys_and_unicode():
    headers = [("trace-id", b"abc"), ("empty", b""), ("null", None), ("trace-id", b"again"), ("clé", b"\xff")]
    batch = encode_batch([(b"k", b"v", T0_MS, headers), (None, b"w", T0_MS + 1, None)], base_offset=7)
    header = validate_batch(batch)
    assert header.attributes == ATTRIBUTE_RECORD_HEADERS
    assert decode_records(batch) == [
        DecodedRecord(7, b"k", b"v", T0_MS, tuple(headers)),
        DecodedRecord(8, None, b"w", T0_MS + 1, ()),
    ]


def test_a_mapping_of_headers_is_taken_in_its_order():
    batch = encode_batch([(None, b"v", T0_MS, {"a": b"1", "b": None})])
    assert decode_records(batch)[0].headers == (("a", b"1"), ("b", None))


def test_a_builder_that_meets_headers_late_gives_earlier_records_an_empty_section():
    builder = BatchBuilder().add_many([(b"k0", b"v0", T0_MS), (None, b"v1", T0_MS + 2)])
    builder.add_many_with_headers([(b"k2", b"v2", T0_MS + 1, [("h", b"x")])])
    builder.add_many([(None, b"v3", T0_MS + 3)])
    batch = builder.build(base_offset=100)
    validate_batch(batch)
    decoded = decode_records(batch)
    assert [(r.offset, r.key, r.value, r.timestamp_ms, r.headers) for r in decoded] == [
        (100, b"k0", b"v0", T0_MS, ()),
        (101, None, b"v1", T0_MS + 2, ()),
        (102, b"k2", b"v2", T0_MS + 1, (("h", b"x"),)),
        (103, None, b"v3", T0_MS + 3, ()),
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(
    st.one_of(st.none(), st.binary(max_size=8)),
    st.binary(max_size=16),
    st.integers(min_value=-10_000, max_value=10_000),
    st.lists(st.tuples(st.text(min_size=1, max_size=6), st.one_of(st.none(), st.binary(max_size=6))), max_size=4),
), min_size=1, max_size=12))
def test_any_records_with_headers_round_trip(records):
    batch = encode_batch([(key, value, T0_MS + delta, headers) for key, value, delta, headers in records])
    validate_batch(batch)
    decoded = decode_records(batch)
    assert [(r.key, r.value, r.timestamp_ms, r.headers) for r in decoded] == [
        (key, value, T0_MS + delta, tuple(headers)) for key, value, delta, headers in records
    ]


def test_log_append_time_stamps_every_record_and_keeps_a_valid_crc():
    batch = encode_batch([(None, b"a", T0_MS, [("h", b"1")]), (None, b"b", T0_MS + 50, None)], producer_id=3)
    header = validate_batch(batch)
    stamped, stamped_header = with_log_append_time(batch, header, T0_MS + 999_000)
    assert stamped_header == read_header(stamped) == validate_batch(stamped)
    assert stamped_header.attributes == ATTRIBUTE_RECORD_HEADERS | ATTRIBUTE_LOG_APPEND_TIME
    assert stamped_header.base_timestamp_ms == stamped_header.max_timestamp_ms == T0_MS + 999_000
    assert stamped_header.producer_id == 3 and stamped_header.crc != header.crc
    decoded = decode_records(with_offset_and_epoch(stamped, 20, 2))
    assert [(r.offset, r.timestamp_ms, r.timestamp_type, r.headers) for r in decoded] == [
        (20, T0_MS + 999_000, TimestampType.LOG_APPEND_TIME, (("h", b"1"),)),
        (21, T0_MS + 999_000, TimestampType.LOG_APPEND_TIME, ()),
    ]


def test_log_append_time_of_a_same_size_batch_validates_on_the_fast_path_too():
    batch = encode_batch([(None, b"x" * 10, T0_MS + i) for i in range(50)])
    stamped, _ = with_log_append_time(batch, validate_batch(batch), T0_MS - 5)
    assert validate_batch(stamped).max_timestamp_ms == T0_MS - 5
    assert {r.timestamp_ms for r in decode_records(stamped)} == {T0_MS - 5}


def restamp(batch: bytes, **fields) -> bytes:
    """`batch` with header fields rewritten and its CRC made valid again: a well-formed bad batch."""
    header = read_header(batch)._replace(**fields)
    covered = CRC_COVERED.pack(*header[5:])
    crc = crc32c(batch[HEADER_SIZE:], crc32c(covered))
    return PREFIX.pack(*header[:4], crc) + covered + batch[HEADER_SIZE:]


def test_unknown_attribute_bits_are_refused():
    batch = restamp(encode_batch([(None, b"v", T0_MS)]), attributes=0x20)  # bits 0-2 are the codec now
    with pytest.raises(CorruptRecordError, match="attributes 0x0020 set bits this format does not know"):
        validate_batch(batch)


def test_a_log_append_time_batch_with_two_timestamps_is_refused():
    batch = restamp(encode_batch([(None, b"v", T0_MS)]), attributes=ATTRIBUTE_LOG_APPEND_TIME,
                    max_timestamp_ms=T0_MS + 1)
    with pytest.raises(CorruptRecordError, match="the leader stamps them equal"):
        validate_batch(batch)


def test_the_builder_refuses_bad_headers_before_adding_anything():
    builder = BatchBuilder().add_many([(None, b"kept", T0_MS)])
    bad = [
        ([("", b"x")], TypeError, "non-empty str"),
        ([(b"bytes-key", b"x")], TypeError, "non-empty str"),
        ([("k", "text")], TypeError, "bytes or None, not str"),
        ([("k",)], TypeError, r"a \(key, value\) pair"),
        ([("k" * (HEADER_KEY_BYTES_MAX + 1), b"")], ValueError, f"at most {HEADER_KEY_BYTES_MAX}"),
        ([("k", b"")] * (RECORD_HEADERS_MAX + 1), ValueError, f"at most {RECORD_HEADERS_MAX} are allowed"),
    ]
    for headers, error, message in bad:
        with pytest.raises(error, match=message):
            builder.add_many_with_headers([(None, b"ok", T0_MS, None), (None, b"bad", T0_MS, headers)])
    assert builder.count == 1
    assert [r.value for r in decode_records(builder.build())] == [b"kept"]


def section(*headers: tuple[bytes, bytes | None], count: int | None = None) -> bytes:
    parts = [(len(headers) if count is None else count).to_bytes(4, "big", signed=True)]
    for key, value in headers:
        parts += [len(key).to_bytes(4, "big"), key]
        parts += [(-1).to_bytes(4, "big", signed=True)] if value is None else [len(value).to_bytes(4, "big"), value]
    return b"".join(parts)


def batch_with_section(raw_section: bytes) -> bytes:
    """A one-record batch with headers whose section is `raw_section` (CRC valid)."""
    good = encode_batch([(None, b"v", T0_MS, [("a", b"b")])])
    body = good[HEADER_SIZE:]
    record = body[: len(body) - len(section((b"a", b"b")))]
    header = read_header(good)
    grown = good[:HEADER_SIZE] + record + raw_section
    return restamp(grown, batch_length=header.batch_length - len(body) + len(record) + len(raw_section))


@pytest.mark.parametrize("raw, message", [
    (section(count=RECORD_HEADERS_MAX + 1), f"between 0 and {RECORD_HEADERS_MAX} are allowed"),
    (section(count=-1), "between 0 and"),
    (section((b"", b"x")), "a key of 0 bytes"),
    (section((b"k" * (HEADER_KEY_BYTES_MAX + 1), b"x")), f"1 to {HEADER_KEY_BYTES_MAX} are allowed"),
    (section((b"\xff\xfe", b"x")), "is not UTF-8"),
    (section((b"k", b"x"), count=2), "header 1 runs past the batch end"),
    (section((b"k", b"x"))[:-1], "runs past the batch end"),
])
def test_validation_names_what_is_wrong_with_a_header_section(raw, message):
    with pytest.raises(CorruptRecordError, match=message):
        validate_batch(batch_with_section(raw))


@pytest.mark.parametrize("raw, message", [
    (section(count=RECORD_HEADERS_MAX + 1), "header count"),
    (section((b"", b"x")), "header key_len 0"),
    (section((b"k", b"x"), count=2), "run past the batch end"),
])
def test_a_reader_that_checks_only_the_crc_still_refuses_a_bad_header_section(raw, message):
    with pytest.raises(CorruptRecordError, match=message):
        decode_records(batch_with_section(raw), verify_crc=True)
