"""Kafka's record batch v2 <-> replog's batch (broker/kafka/records.py): what a Kafka producer sends
reads back identically through replog's decoder, and what replog stores reads back identically
through a Kafka client's decoder (kafka-python's), for every codec, with keys, null keys, headers and
the producer fields; malformed or unsupported batches are refused with the right kind of error."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from replog.broker.kafka.records import KafkaRecordError, to_kafka, to_replog
from replog.common.records import (
    decode_records,
    encode_batch,
    encode_empty_batch,
    read_header,
    validate_batch,
    with_offset_and_epoch,
)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0_MS = 1_700_000_000_000


def kafka_batch(records, *, codec: int = 0, producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, transactional, producer_id, producer_epoch, base_sequence,
                                        1 << 20)
    for offset, (key, value, timestamp_ms, headers) in enumerate(records):
        builder.append(offset, timestamp_ms, key, value, list(headers))
    return bytes(builder.build())


RECORDS = [
    (b"k0", b"v0 " * 200, T0_MS, []),  # long enough that every codec makes the batch smaller
    (None, b"v1 with a null key", T0_MS + 5, [("h", b"x"), ("null-header", None)]),
    (b"k2", b"", T0_MS - 3, []),
    (b"k3", None, T0_MS + 1, []),  # a tombstone
]


@pytest.mark.parametrize("codec", list(CODECS))
def test_a_kafka_batch_reads_the_same_through_replog(codec):
    stored = to_replog(kafka_batch(RECORDS, codec=CODECS[codec], producer_id=7, producer_epoch=2, base_sequence=40))
    header = validate_batch(stored)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.attributes & 0x07 == CODECS[codec]
    decoded = decode_records(with_offset_and_epoch(stored, 100, 3))
    assert [(r.offset, r.key, r.value, r.timestamp_ms, r.headers) for r in decoded] == [
        (100 + i, key, value, stamp, tuple(headers)) for i, (key, value, stamp, headers) in enumerate(RECORDS)]


def test_the_cleaners_empty_batch_reads_through_a_kafka_client_as_no_record_and_its_offsets():
    """Kafka's v2 format has empty batches too (its cleaner's, for a producer's state): a client skips it."""
    empty = encode_empty_batch(base_offset=10, last_offset_delta=4, leader_epoch=3, timestamp_ms=T0_MS,
                               producer_id=7, producer_epoch=2, base_sequence=40)
    out = to_kafka(empty + encode_batch([(b"k", b"v", T0_MS)], base_offset=15))
    first = DefaultRecordBatch(out[:61])  # a header only (the client checks a CRC over all it is given)
    assert first.size_in_bytes == 61 and first.validate_crc() and list(first) == []
    assert (first.base_offset, first.last_offset_delta, first.producer_id, first.base_sequence) == (10, 4, 7, 40)
    second = DefaultRecordBatch(out[first.size_in_bytes:])
    assert second.validate_crc() and [r.offset for r in second] == [15]


@pytest.mark.parametrize("codec", list(CODECS))
def test_a_stored_batch_reads_the_same_through_a_kafka_client(codec):
    stored = with_offset_and_epoch(
        to_replog(kafka_batch(RECORDS, codec=CODECS[codec], producer_id=7, producer_epoch=2, base_sequence=40)), 100, 3)
    out = to_kafka(stored + stored[:30])  # a batch cut short at the end is left out
    batch = DefaultRecordBatch(out)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.leader_epoch, batch.producer_id, batch.producer_epoch, batch.base_sequence) == \
        (100, 3, 7, 2, 40)
    assert batch.compression_type == CODECS[codec]
    got = [(r.offset, r.key, r.value, r.timestamp, [tuple(h) for h in r.headers]) for r in batch]
    assert got == [(100 + i, key, value, stamp, headers) for i, (key, value, stamp, headers) in enumerate(RECORDS)]
    assert len(out) == batch.size_in_bytes


def test_snappy_in_xerial_framing_is_read():
    from kafka.codec import snappy_encode

    plain = kafka_batch(RECORDS)
    header = read_header(plain)
    framed_body = snappy_encode(plain[61:], xerial_compatible=True, xerial_blocksize=64)
    assert framed_body.startswith(b"\x82SNAPPY\x00")
    builder_batch = bytearray(plain[:61] + framed_body)
    # attributes: snappy; then the length and the CRC anew, as a producer writes them
    import struct

    from crc32c import crc32c

    struct.pack_into(">h", builder_batch, 21, 2)
    struct.pack_into(">i", builder_batch, 8, len(builder_batch) - 12)
    struct.pack_into(">I", builder_batch, 17, crc32c(bytes(builder_batch[21:])))
    stored = to_replog(bytes(builder_batch))
    assert [r.value for r in decode_records(stored)] == [value for _, value, _, _ in RECORDS]
    assert header.record_count == len(RECORDS)


def test_a_damaged_batch_is_refused_as_corrupt():
    data = bytearray(kafka_batch(RECORDS))
    data[-1] ^= 0xFF
    with pytest.raises(KafkaRecordError, match="CRC") as refused:
        to_replog(bytes(data))
    assert not refused.value.invalid


@pytest.mark.parametrize("data, invalid, match", [
    (b"", False, "no record batch"),
    (kafka_batch(RECORDS) * 2, False, "exactly one record batch"),
    (kafka_batch(RECORDS)[:-4], False, "cut short"),
    (kafka_batch(RECORDS, transactional=True, producer_id=1, producer_epoch=0, base_sequence=0), True,
     "transactional"),
])
def test_what_replog_cannot_take_is_refused(data, invalid, match):
    with pytest.raises(KafkaRecordError, match=match) as refused:
        to_replog(data)
    assert refused.value.invalid is invalid


def test_a_batch_filled_to_the_limit_is_stored_compressed_to_fit_it():
    import os

    records = [(None, os.urandom(100), T0_MS, []) for _ in range(8000)]
    data = kafka_batch(records)
    limit = len(data) + 100  # the client filled its batch nearly up to the limit
    plain = to_replog(data)
    assert len(plain) > limit  # replog's fixed-width records take more room
    fitted = to_replog(data, limit)
    assert len(fitted) <= limit and validate_batch(fitted).attributes & 0x07 == CODECS["zstd"]
    assert [r.value for r in decode_records(fitted)] == [value for _, value, _, _ in records]
    assert to_replog(data, len(data) - 1) == plain  # a client batch over the limit is left to be refused
