"""Checking a record batch: `validate_batch` / `check_batch` say whether bytes are a well-formed batch.

The leader validates every batch a producer sends, once, before appending it; the log
checks what it recovers at start-up. Two checks of the records give the same verdict: the
general one walks every record and names what is wrong; a fast one covers batches whose
records all have one size (see `_uniform_records_are_valid`) and says only "valid" or "not
shown valid", which sends the batch to the general one. A compressed batch's CRC is checked on
the bytes as sent; its records are checked on their expansion (compression.py).
"""

from __future__ import annotations

import functools
import struct

from crc32c import crc32c

from .batch import (
    ATTRIBUTE_COMPRESSION_MASK,
    ATTRIBUTE_LOG_APPEND_TIME,
    ATTRIBUTE_RECORD_HEADERS,
    ATTRIBUTES_KNOWN,
    CRC_START,
    HEADER_KEY_BYTES_MAX,
    HEADER_SIZE,
    INT32,
    MAGIC,
    MIN_BATCH_LENGTH,
    RECORD_HEAD,
    RECORD_HEADERS_MAX,
    BatchHeader,
    CorruptRecordError,
    RecordTooLargeError,
    read_header,
)
from .compression import COMPRESSION_ZSTD, UnsupportedCompressionError, expanded_batch


def validate_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_bytes: int | None = None,
    check_records: bool = True,
) -> BatchHeader:
    """Check the batch at `pos` and return its header.

    Checks magic, length bounds (against `buf` and `max_bytes`), the CRC, the
    attributes, the record count (0 only for the cleaner's empty batch, header only: a
    producer's batch is refused by its receiver), and with `check_records` that the records exactly
    fill the batch with offset deltas 0..n-1, the stated max timestamp (for a
    LogAppendTime batch: base and max timestamp equal) and headers within bounds, on the
    expanded records of a compressed batch. Raises `RecordTooLargeError` or
    `CorruptRecordError` (`UnsupportedCompressionError` for an unknown codec) saying what is wrong.
    """
    return check_batch(buf, read_header(buf, pos), pos, max_bytes=max_bytes, check_records=check_records)


def check_batch(
    buf: bytes | bytearray | memoryview,
    header: BatchHeader,
    pos: int = 0,
    *,
    max_bytes: int | None = None,
    check_records: bool = True,
) -> BatchHeader:
    """`validate_batch` for the batch at `pos` whose header was already read there (`iter_batches`
    yields it): the same checks, without parsing the header a second time."""
    if header.magic != MAGIC:
        raise CorruptRecordError(f"batch at position {pos}: magic {header.magic}, expected {MAGIC}")
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            f"batch at position {pos}: batch_length {header.batch_length} is below the minimum {MIN_BATCH_LENGTH}"
        )
    size_bytes = header.size_bytes
    if max_bytes is not None and size_bytes > max_bytes:
        raise RecordTooLargeError(f"batch at position {pos} is {size_bytes} bytes, the limit is {max_bytes}")
    available = len(buf) - pos
    if size_bytes > available:
        raise CorruptRecordError(
            f"batch at position {pos}: batch_length says {size_bytes} bytes, only {available} available"
        )
    actual_crc = crc32c(memoryview(buf)[pos + CRC_START : pos + size_bytes])
    if actual_crc != header.crc:
        raise CorruptRecordError(
            f"batch at position {pos} (base offset {header.base_offset}): CRC mismatch, "
            f"stored {header.crc:#010x}, computed {actual_crc:#010x}"
        )
    if header.attributes & ~ATTRIBUTES_KNOWN:
        raise CorruptRecordError(
            f"batch at position {pos}: attributes {header.attributes:#06x} set bits this format does not know "
            f"(known: {ATTRIBUTES_KNOWN:#06x})"
        )
    if header.record_count == 0:  # the log cleaner's empty batch (batch.py): a header, nothing after it
        if header.last_offset_delta < 0 or header.batch_length != MIN_BATCH_LENGTH or header.attributes:
            raise CorruptRecordError(
                f"batch at position {pos}: an empty batch with last_offset_delta {header.last_offset_delta}, "
                f"batch_length {header.batch_length} and attributes {header.attributes:#06x}"
            )
        return header
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise CorruptRecordError(
            f"batch at position {pos}: record_count {header.record_count} and "
            f"last_offset_delta {header.last_offset_delta} are inconsistent"
        )
    codec = header.attributes & ATTRIBUTE_COMPRESSION_MASK
    if codec > COMPRESSION_ZSTD:
        raise UnsupportedCompressionError(
            f"batch at position {pos}: compression codec {codec} is unknown (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)"
        )
    if check_records:
        if codec:
            try:
                expanded, plain = expanded_batch(buf, pos, header)
            except CorruptRecordError as exc:
                raise CorruptRecordError(f"batch at position {pos}: {exc}") from None
            _check_records(expanded, 0, plain)
        else:
            _check_records(buf, pos, header)
    return header


def _check_records(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """The records must exactly fill the batch, in offset order, within its max timestamp."""
    with_headers = header.attributes & ATTRIBUTE_RECORD_HEADERS
    if not with_headers and _uniform_records_are_valid(buf, pos, header):
        return
    end = pos + header.size_bytes
    p = pos + HEADER_SIZE
    unpack_head = RECORD_HEAD.unpack_from
    unpack_int32 = INT32.unpack_from
    max_timestamp_delta_ms = None
    for expected_delta in range(header.record_count):
        if p + RECORD_HEAD.size + INT32.size > end:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} runs past the batch end")
        offset_delta, timestamp_delta_ms, key_len = unpack_head(buf, p)
        if offset_delta != expected_delta:
            raise CorruptRecordError(
                f"batch at position {pos}: record {expected_delta} has offset_delta {offset_delta}"
            )
        if key_len < -1:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} has key_len {key_len}")
        if max_timestamp_delta_ms is None or timestamp_delta_ms > max_timestamp_delta_ms:
            max_timestamp_delta_ms = timestamp_delta_ms
        p += RECORD_HEAD.size + max(key_len, 0)
        if p + INT32.size > end:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} runs past the batch end")
        (value_len,) = unpack_int32(buf, p)
        if value_len < -1:  # -1: a null value (a tombstone)
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} has value_len {value_len}")
        p += INT32.size + max(value_len, 0)
        if p > end:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} runs past the batch end")
        if with_headers:
            p = _check_record_headers(buf, p, end, f"batch at position {pos}: record {expected_delta}")
    if p != end:
        raise CorruptRecordError(f"batch at position {pos}: {end - p} bytes follow the last record")
    assert max_timestamp_delta_ms is not None
    _check_max_timestamp(pos, header, max_timestamp_delta_ms)


def _check_max_timestamp(pos: int, header: BatchHeader, max_timestamp_delta_ms: int) -> None:
    """CreateTime: the max timestamp is the largest record's; LogAppendTime: base and max are the
    leader's one stamp (the records' deltas are the producer's, and not read)."""
    if header.attributes & ATTRIBUTE_LOG_APPEND_TIME:
        if header.base_timestamp_ms != header.max_timestamp_ms:
            raise CorruptRecordError(
                f"batch at position {pos}: a LogAppendTime batch has base timestamp {header.base_timestamp_ms} "
                f"and max timestamp {header.max_timestamp_ms}; the leader stamps them equal"
            )
        return
    if header.base_timestamp_ms + max_timestamp_delta_ms != header.max_timestamp_ms:
        raise CorruptRecordError(
            f"batch at position {pos}: max_timestamp_ms {header.max_timestamp_ms} is not the "
            f"largest record timestamp {header.base_timestamp_ms + max_timestamp_delta_ms}"
        )


def _check_record_headers(buf: bytes | bytearray | memoryview, p: int, end: int, where: str) -> int:
    """Check the header section at `p` (count, bounds, UTF-8 keys, framing); the position after it."""
    if p + INT32.size > end:
        raise CorruptRecordError(f"{where}: its header count runs past the batch end")
    (count,) = INT32.unpack_from(buf, p)
    p += INT32.size
    if not 0 <= count <= RECORD_HEADERS_MAX:
        raise CorruptRecordError(f"{where} has {count} headers; between 0 and {RECORD_HEADERS_MAX} are allowed")
    for index in range(count):
        if p + INT32.size > end:
            raise CorruptRecordError(f"{where}: header {index} runs past the batch end")
        (key_len,) = INT32.unpack_from(buf, p)
        if not 0 < key_len <= HEADER_KEY_BYTES_MAX:
            raise CorruptRecordError(
                f"{where}: header {index} has a key of {key_len} bytes; 1 to {HEADER_KEY_BYTES_MAX} are allowed"
            )
        p += INT32.size
        if p + key_len + INT32.size > end:
            raise CorruptRecordError(f"{where}: header {index} runs past the batch end")
        try:
            bytes(buf[p : p + key_len]).decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError(f"{where}: the key of header {index} is not UTF-8") from None
        p += key_len
        (value_len,) = INT32.unpack_from(buf, p)
        if value_len < -1:
            raise CorruptRecordError(f"{where}: header {index} has value_len {value_len}")
        p += INT32.size + max(value_len, 0)
        if p > end:
            raise CorruptRecordError(f"{where}: header {index} runs past the batch end")
    return p


# Batches whose records all have the same key and value sizes (the common case: a
# producer sending fixed-size records) are checked with C-level operations instead of
# a Python loop per record. With one record size every record starts a fixed stride
# apart, so each byte of its offset delta, key length and value length forms a column
# (`area[j::stride]`): a length byte is the same in every record, and the offset-delta
# columns are those of 0..n-1. Only the timestamp deltas are unpacked, a chunk of
# records at a time, to find their maximum.
#
# A latency-bound producer sends whatever arrived during a round trip, so its batches
# hold a different record count almost every time. So the cached columns cover a
# power of two of records (a batch compares their first n bytes), and the timestamps'
# unpackers are of whole chunks but for the last, partial one (small, and at most
# _TIMESTAMP_CHUNK of them per record size). The measurements, and the cache keyed by
# record count that this replaced: docs/perf/same-size-batch-check.md.
_KEY_LEN_AT = RECORD_HEAD.size - INT32.size  # a record's key_len, after offset_delta and timestamp_delta
_TIMESTAMP_CHUNK = 256  # records whose timestamp deltas one unpack reads
_TIMESTAMP_UNPACKERS_MAX = 64
_COLUMNS_MIN = 1024  # records the columns of a layout cover at least (then a power of two)


@functools.lru_cache(maxsize=16)
def _uniform_columns(key_len: int, value_len: int, size: int) -> tuple[tuple[int, bytes], ...]:
    """(byte position in a record, that byte of each of `size` records of one size), for every
    offset-delta, key-length and value-length byte; a batch of n records holds the first n of each."""
    value_len_at = RECORD_HEAD.size + max(key_len, 0)
    deltas = [delta.to_bytes(4, "big") for delta in range(size)]
    columns = [(j, bytes(delta[j] for delta in deltas)) for j in range(4)]
    for at, length in ((_KEY_LEN_AT, key_len), (value_len_at, value_len)):
        columns += [(at + j, bytes((byte,)) * size) for j, byte in enumerate(length.to_bytes(4, "big", signed=True))]
    return tuple(columns)


@functools.lru_cache(maxsize=_TIMESTAMP_UNPACKERS_MAX)
def _timestamp_deltas(stride: int, record_count: int) -> struct.Struct:
    """Unpacks the timestamp deltas of `record_count` records `stride` bytes apart, from a record's start."""
    return struct.Struct(">" + f"4xq{stride - _KEY_LEN_AT}x" * record_count)


def _max_timestamp_delta(area: bytes, stride: int, record_count: int) -> int:
    """The largest timestamp delta of `record_count` records `stride` bytes apart in `area`."""
    chunk_bytes = _TIMESTAMP_CHUNK * stride
    full, rest = divmod(record_count, _TIMESTAMP_CHUNK)
    highest = []
    if full:
        unpack_from = _timestamp_deltas(stride, _TIMESTAMP_CHUNK).unpack_from
        highest = [max(unpack_from(area, at)) for at in range(0, full * chunk_bytes, chunk_bytes)]
    if rest:
        highest.append(max(_timestamp_deltas(stride, rest).unpack_from(area, full * chunk_bytes)))
    return max(highest)


def _uniform_records_are_valid(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bool:
    """True when the records have one size and pass every check of `_check_records`.

    False means only "not shown valid this way": the caller then runs the general
    per-record check, which accepts mixed sizes and names what is wrong otherwise.
    """
    start = pos + HEADER_SIZE
    end = pos + header.size_bytes
    record_count = header.record_count
    if end - start < RECORD_HEAD.size + INT32.size:
        return False
    _, _, key_len = RECORD_HEAD.unpack_from(buf, start)
    if key_len < -1:
        return False
    key_bytes = max(key_len, 0)
    if start + RECORD_HEAD.size + key_bytes + INT32.size > end:
        return False
    (value_len,) = INT32.unpack_from(buf, start + RECORD_HEAD.size + key_bytes)
    stride = RECORD_HEAD.size + key_bytes + INT32.size + value_len
    if value_len < 0 or stride * record_count != end - start:
        return False
    columns = _uniform_columns(key_len, value_len, max(_COLUMNS_MIN, 1 << (record_count - 1).bit_length()))
    area = bytes(memoryview(buf)[start:end])
    for at, column in columns:
        if area[at::stride] != column[:record_count]:
            return False
    if header.attributes & ATTRIBUTE_LOG_APPEND_TIME:
        return header.base_timestamp_ms == header.max_timestamp_ms
    return header.base_timestamp_ms + _max_timestamp_delta(area, stride, record_count) == header.max_timestamp_ms

