"""Kafka's record batch v2 <-> replog's batch, both ways, CRCs checked on the way in.

The two formats share the 61-byte batch header field for field (records/batch.py: base offset,
length, partition leader epoch, magic 2, CRC-32C from the attributes on, producer id, epoch, base
sequence, record count) and differ in the records: Kafka writes each record with zigzag varints
(length, attributes, timestamp delta, offset delta, key, value, headers), replog with fixed-width
integers. So a produced batch is translated once, on the way in, and a fetched one on the way out:

- in (`to_replog`): exactly one batch per partition, magic 2, the producer's CRC checked over the
  bytes as sent, the attributes limited to the codec and CreateTime (a transactional or control
  batch is refused: replog has no transactions), the records expanded (a snappy block may come in
  Kafka's xerial framing, as the Java client and kafka-python send it), read, and written as one
  replog batch with the same codec, timestamps, keys, values, headers, producer id, producer epoch
  and base sequence, so the leader's idempotence check (core/produce/producer_state.py) sees what the
  producer sent. A record with a null value is a tombstone, stored as one (records/batch.py).
- out (`to_kafka`): each stored batch's CRC checked (reading.decode_records), its records written in
  Kafka's layout with the stored base offset, partition leader epoch (KIP-320), producer fields,
  timestamp type and codec, and a new CRC. A batch cut short at the end of a fetch is left out, as
  Kafka clients expect of a partial batch.

Errors: `KafkaRecordError` (the Kafka bytes are malformed: CORRUPT_MESSAGE, or what replog cannot
hold: INVALID_RECORD) for the caller to answer per partition. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from replog.broker.kafka.wire import VARINT_BYTES_MAX, Reader, WireError, encode_varint
from replog.common.records import (
    ATTRIBUTE_COMPRESSION_MASK,
    ATTRIBUTE_LOG_APPEND_TIME,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CRC_START,
    HEADER_SIZE,
    MAGIC,
    BatchHeader,
    CorruptRecordError,
    TimestampType,
    UnsupportedCompressionError,
    decode_records,
    encode_batch,
    iter_batches,
    read_header,
    recompressed,
)
from replog.common.records.compression import compress, expand

KAFKA_TRANSACTIONAL = 0x10
KAFKA_CONTROL = 0x20
KAFKA_DELETE_HORIZON = 0x40
_KAFKA_KNOWN = ATTRIBUTE_COMPRESSION_MASK | ATTRIBUTE_LOG_APPEND_TIME
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_BYTES = 16  # magic, version, compatible version
_PREFIX = struct.Struct(">qiibI")
_COVERED = struct.Struct(">hiqqqhii")
_I32 = struct.Struct(">i")


class KafkaRecordError(Exception):
    """A produced batch the listener refuses; `invalid` for well-formed records replog cannot hold
    (INVALID_RECORD), else the bytes are malformed (CORRUPT_MESSAGE)."""

    def __init__(self, message: str, *, invalid: bool = False) -> None:
        super().__init__(message)
        self.invalid = invalid


# --- in: Kafka -> replog ------------------------------------------------------------------------

def to_replog(data: bytes, bytes_max: int | None = None) -> bytes:
    """The one Kafka v2 batch in `data` as a replog batch (base offset and leader epoch left for the leader).

    Replog's fixed-width records take more room than Kafka's varints (about 16 bytes a record more), so a
    batch a Kafka client filled up to the size limit, `bytes_max`, may no longer fit it once translated:
    such a batch, when the client's own was within the limit, is stored zstd-compressed (the widened
    fields are mostly zero bytes, which it takes back), so that clients' default batch sizes work.
    Whether it then fits is the produce path's to check, as for any batch."""
    if len(data) < HEADER_SIZE:
        raise KafkaRecordError(f"{len(data)} bytes are no record batch (a v2 batch header takes {HEADER_SIZE})")
    try:
        header = read_header(data)
    except CorruptRecordError as exc:
        raise KafkaRecordError(str(exc)) from None
    if header.magic != MAGIC:
        raise KafkaRecordError(f"record batch magic {header.magic}: only v2 batches (magic 2) are accepted")
    size = header.batch_length + 12
    if size != len(data):
        raise KafkaRecordError("a produce request carries exactly one record batch per partition"
                               if size < len(data) else "the record batch is cut short")
    if crc32c(memoryview(data)[CRC_START:]) != header.crc:
        raise KafkaRecordError("the record batch's CRC-32C does not match its bytes")
    if header.attributes & (KAFKA_TRANSACTIONAL | KAFKA_CONTROL):
        raise KafkaRecordError("transactional and control batches are not supported (replog has no transactions)",
                               invalid=True)
    if header.attributes & ~_KAFKA_KNOWN:
        raise KafkaRecordError(f"unknown batch attributes {header.attributes:#x}")
    if header.attributes & ATTRIBUTE_LOG_APPEND_TIME:
        raise KafkaRecordError("a producer's batch may not claim LogAppendTime", invalid=True)
    codec = header.attributes & ATTRIBUTE_COMPRESSION_MASK
    body = memoryview(data)[HEADER_SIZE:]
    try:
        if codec != COMPRESSION_NONE:
            body = _expand(codec, bytes(body))
    except UnsupportedCompressionError as exc:
        raise KafkaRecordError(str(exc), invalid=True) from None
    except CorruptRecordError as exc:
        raise KafkaRecordError(str(exc)) from None
    records = _read_records(body, header)
    try:
        batch = encode_batch(records, producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                             base_sequence=header.base_sequence, compression=codec)
    except (TypeError, ValueError) as exc:  # headers replog's format does not hold (an empty key, too many)
        raise KafkaRecordError(f"record headers: {exc}", invalid=True) from None
    if bytes_max is not None and len(data) <= bytes_max < len(batch) and codec != COMPRESSION_ZSTD:
        squeezed, _ = recompressed(batch, read_header(batch), COMPRESSION_ZSTD)
        if len(squeezed) < len(batch):
            return squeezed
    return batch


def _expand(codec: int, body: bytes) -> bytes:
    if codec == COMPRESSION_SNAPPY and body.startswith(_XERIAL_MAGIC):
        reader, parts = Reader(body, _XERIAL_HEADER_BYTES), []
        try:
            while reader.left:
                parts.append(expand(codec, reader.raw(reader.int32())))
        except WireError as exc:
            raise CorruptRecordError(f"snappy (xerial framing): {exc}") from None
        return b"".join(parts)
    return expand(codec, body)


def _read_records(body, header: BatchHeader) -> list:
    """The batch's records as (key, value, timestamp_ms, headers). Hot: one call per produced record, so
    varints are read inline (`_varint`), not through a Reader."""
    data = bytes(body)
    end_all = len(data)
    base_ms = header.base_timestamp_ms
    records = []
    append = records.append
    pos = 0
    try:
        for index in range(header.record_count):
            length, pos = _varint(data, pos)
            end = pos + length
            if length < 0 or end > end_all:
                raise WireError(f"record {index} claims {length} bytes")
            delta_ms, pos = _varint(data, pos + 1)  # past the record attributes (unused by Kafka so far)
            offset_delta, pos = _varint(data, pos)
            if offset_delta != index:
                raise KafkaRecordError(f"record {index} has another offset delta: records must be numbered 0, 1, ...")
            size, pos = _varint(data, pos)
            key = None if size < 0 else data[pos:pos + size]
            pos += max(size, 0)
            size, pos = _varint(data, pos)
            value = None if size < 0 else data[pos:pos + size]
            pos += max(size, 0)
            count, pos = _varint(data, pos)
            headers = None
            if count:
                headers = []
                for _ in range(count):
                    size, pos = _varint(data, pos)
                    if size < 0:
                        raise WireError("a header with a null key")
                    name = data[pos:pos + size].decode("utf-8")
                    pos += size
                    size, pos = _varint(data, pos)
                    headers.append((name, None if size < 0 else data[pos:pos + size]))
                    pos += max(size, 0)
                headers = tuple(headers)
            if pos != end:
                raise WireError(f"record {index} does not end where its length says")
            append((key, value, base_ms + delta_ms, headers))
    except (WireError, UnicodeDecodeError, IndexError) as exc:
        raise KafkaRecordError(f"malformed records: {exc or 'cut short'}") from None
    if pos != end_all:
        raise KafkaRecordError(f"{end_all - pos} bytes follow the batch's {header.record_count} records")
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise KafkaRecordError("the batch's last offset delta does not match its record count")
    return records


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The zigzag varint at `pos` and the position after it; IndexError when cut short."""
    byte = data[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw, shift = byte & 0x7F, 7
    for at in range(pos + 1, pos + VARINT_BYTES_MAX):
        byte = data[at]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), at + 1
        shift += 7
    raise WireError("a varint longer than 10 bytes")


# --- out: replog -> Kafka ------------------------------------------------------------------------

def to_kafka(stored: bytes) -> bytes:
    """The whole batches in `stored` (a fetch's bytes, as the log holds them) in Kafka's v2 layout.
    Raises CorruptRecordError when a stored batch fails its CRC."""
    if not stored:
        return b""
    parts = []
    for pos, header in iter_batches(stored):
        end = pos + header.batch_length + 12
        records = decode_records(stored[pos:end])
        parts.append(_kafka_batch(header, records))
    return b"".join(parts)


def _kafka_batch(header: BatchHeader, records: list) -> bytes:
    append_time = header.attributes & ATTRIBUTE_LOG_APPEND_TIME
    base_timestamp_ms = header.base_timestamp_ms
    base_offset = header.base_offset
    parts = []
    add = parts.append
    for record in records:
        delta_ms = 0 if append_time or record.timestamp_type is TimestampType.LOG_APPEND_TIME \
            else record.timestamp_ms - base_timestamp_ms
        key, value = record.key, record.value
        inner = [b"\x00", _zigzag(delta_ms), _zigzag(record.offset - base_offset)]
        if key is None:
            inner.append(_NULL)
        else:
            inner += (_zigzag(len(key)), key)
        if value is None:
            inner.append(_NULL)
        else:
            inner += (_zigzag(len(value)), value)
        inner.append(_zigzag(len(record.headers)))
        for name, header_value in record.headers:
            encoded = name.encode("utf-8")
            inner += (_zigzag(len(encoded)), encoded)
            if header_value is None:
                inner.append(_NULL)
            else:
                inner += (_zigzag(len(header_value)), header_value)
        body = b"".join(inner)
        add(_zigzag(len(body)))
        add(body)
    codec = header.attributes & ATTRIBUTE_COMPRESSION_MASK
    payload = b"".join(parts)
    if codec != COMPRESSION_NONE:
        payload = compress(codec, payload)
    attributes = codec | append_time
    covered = _COVERED.pack(attributes, header.last_offset_delta, base_timestamp_ms, header.max_timestamp_ms,
                            header.producer_id, header.producer_epoch, header.base_sequence, header.record_count)
    crc = crc32c(payload, crc32c(covered))
    prefix = _PREFIX.pack(header.base_offset, HEADER_SIZE - 12 + len(payload), header.partition_leader_epoch,
                          MAGIC, crc)
    return b"".join((prefix, covered, payload))


_SMALL = {value: encode_varint(value) for value in range(-64, 1 << 14)}  # the lengths and deltas most records have
_NULL = encode_varint(-1)


def _zigzag(value: int) -> bytes:
    found = _SMALL.get(value)
    return found if found is not None else encode_varint(value)
