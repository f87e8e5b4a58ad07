"""Compressed batches (records/compression.py): every codec round-trips, the CRC covers the compressed
bytes, an unknown codec and bytes that do not expand are refused with their own errors, expansion is
bounded, and a leader's recompression keeps the records and makes a valid batch."""

from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from replog.common import records as rec
from replog.common.records import compression
from replog.common.records.batch import CRC_COVERED, CRC_START, HEADER_SIZE, PREFIX

CODECS = sorted(rec.CODECS.values())
RECORDS = [(b"k%d" % i, b'{"id": %d, "status": "active", "region": "eu-west"}' % i, 1_700_000_000_000 + i)
           for i in range(200)]


def _records(batch: bytes) -> list[tuple]:
    return [(r.key, r.value, r.timestamp_ms, r.headers) for r in rec.decode_records(batch)]


@pytest.mark.parametrize("codec", CODECS)
def test_each_codec_round_trips_and_sets_its_attribute_bits(codec):
    batch = rec.encode_batch(RECORDS, compression=codec, producer_id=7, producer_epoch=1, base_sequence=40)
    header = rec.validate_batch(batch)
    assert header.attributes & rec.ATTRIBUTE_COMPRESSION_MASK == codec
    assert header.record_count == len(RECORDS) and header.producer_id == 7 and header.base_sequence == 40
    assert _records(batch) == [(k, v, t, ()) for k, v, t in RECORDS]
    if codec:
        assert len(batch) < len(rec.encode_batch(RECORDS)) / 2  # JSON-like records compress


@pytest.mark.parametrize("codec", CODECS[1:])
def test_headers_log_append_time_and_start_offset_work_on_compressed_batches(codec):
    batch = rec.encode_batch([(None, b"a", 5, [("h", b"x"), ("n", None)]), (b"k", b"b", 9, None)],
                             compression=codec, base_offset=10)
    stamped, header = rec.with_log_append_time(batch, rec.validate_batch(batch), 1234)
    rec.validate_batch(stamped)
    decoded = rec.decode_records(stamped, start_offset=11)
    assert [(r.offset, r.key, r.value, r.timestamp_ms, r.headers) for r in decoded] == [(11, b"k", b"b", 1234, ())]
    assert decoded[0].timestamp_type is rec.TimestampType.LOG_APPEND_TIME
    assert header.attributes & rec.ATTRIBUTE_COMPRESSION_MASK == codec


def test_an_uncompressed_batch_is_laid_out_as_before_compression_existed():
    plain = rec.encode_batch(RECORDS[:3])
    assert rec.read_header(plain).attributes == 0
    assert rec.encode_batch(RECORDS[:3], compression=rec.COMPRESSION_NONE) == plain


def _with_attributes_and_body(batch: bytes, attributes: int, body: bytes) -> bytes:
    """`batch` with other attributes and records bytes, its length and CRC made right."""
    header = rec.read_header(batch)
    covered = CRC_COVERED.pack(attributes, *header[6:])
    crc = crc32c(body, crc32c(covered))
    return PREFIX.pack(0, rec.MIN_BATCH_LENGTH + len(body), -1, 2, crc) + covered + body


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_an_unknown_codec_is_refused_as_unsupported(codec):
    plain = rec.encode_batch(RECORDS[:2])
    batch = _with_attributes_and_body(plain, codec, plain[HEADER_SIZE:])
    with pytest.raises(rec.UnsupportedCompressionError, match=f"codec {codec}"):
        rec.validate_batch(batch)
    with pytest.raises(rec.UnsupportedCompressionError):
        rec.decode_records(batch, verify_crc=False)


@pytest.mark.parametrize("codec", CODECS[1:])
def test_bytes_that_do_not_expand_are_a_corrupt_batch_not_a_crash(codec):
    plain = rec.encode_batch(RECORDS[:2])
    batch = _with_attributes_and_body(plain, codec, b"\x00\x01this is not compressed at all" * 3)
    with pytest.raises(rec.CorruptRecordError) as raised:
        rec.validate_batch(batch)
    assert not isinstance(raised.value, rec.UnsupportedCompressionError)
    with pytest.raises(rec.CorruptRecordError):
        rec.decode_records(batch)


@pytest.mark.parametrize("codec", CODECS[1:])
def test_expanded_records_that_do_not_fill_the_batch_are_refused(codec):
    plain = rec.encode_batch(RECORDS[:2])
    body = compression.compress(codec, plain[HEADER_SIZE:] + b"extra")
    with pytest.raises(rec.CorruptRecordError, match="follow the last record"):
        rec.validate_batch(_with_attributes_and_body(plain, codec, body))


@pytest.mark.parametrize("codec", CODECS[1:])
def test_expansion_is_bounded(codec):
    bomb = compression.compress(codec, bytes(2 * 1024 * 1024))
    with pytest.raises(rec.CorruptRecordError, match="more than"):
        compression.expand(codec, bomb, limit=1024 * 1024)
    assert len(compression.expand(codec, bomb, limit=2 * 1024 * 1024)) == 2 * 1024 * 1024


def test_a_flipped_compressed_byte_fails_the_crc_before_anything_is_expanded():
    batch = bytearray(rec.encode_batch(RECORDS, compression=rec.COMPRESSION_GZIP))
    batch[HEADER_SIZE + 20] ^= 0x40
    with pytest.raises(rec.CorruptRecordError, match="CRC"):
        rec.validate_batch(bytes(batch), check_records=False)


def test_gzip_is_a_plain_gzip_member_that_any_library_reads():
    batch = rec.encode_batch(RECORDS[:5], compression=rec.COMPRESSION_GZIP)
    body = batch[HEADER_SIZE:]
    assert body[:2] == b"\x1f\x8b"
    assert zlib.decompress(body, 31) == rec.encode_batch(RECORDS[:5])[HEADER_SIZE:]


@pytest.mark.parametrize("source", CODECS)
@pytest.mark.parametrize("target", CODECS)
def test_recompression_keeps_the_records_and_the_producer_fields(source, target):
    batch = rec.encode_batch(RECORDS[:50], compression=source, producer_id=3, producer_epoch=2, base_sequence=9)
    again, header = rec.recompressed(batch, rec.validate_batch(batch), target)
    assert rec.validate_batch(again) == header
    assert header.attributes & rec.ATTRIBUTE_COMPRESSION_MASK == target
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (3, 2, 9)
    assert _records(again) == _records(batch)
    if source == target:
        assert again == batch


@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.binary(max_size=200),
                          st.integers(0, 2**40)), min_size=1, max_size=30),
       st.sampled_from(CODECS))
def test_property_any_records_round_trip_through_any_codec(records, codec):
    batch = rec.encode_batch(records, compression=codec)
    rec.validate_batch(batch)
    assert [(r.key, r.value, r.timestamp_ms) for r in rec.decode_records(batch)] == records


def test_the_crc_starts_where_the_format_says():
    batch = rec.encode_batch(RECORDS[:1], compression=rec.COMPRESSION_ZSTD)
    (stored,) = struct.unpack_from(">I", batch, 17)
    assert stored == crc32c(batch[CRC_START:])
