"""Reading record batches: walking whole batches (`iter_batches`) and decoding their records.

`iter_batches` reads headers only and stops cleanly at an incomplete tail, which is what
the log and the replica fetchers need; `decode_records` is the consumer's view, checking each
batch's CRC unless told not to, and expanding a compressed batch's records (compression.py)
before it decodes them as it would an uncompressed batch's.
"""

from __future__ import annotations

import functools
import struct
from typing import NamedTuple

from replog.common.core.timestamp_type import TimestampType

from .batch import (
    ATTRIBUTE_COMPRESSION_MASK,
    ATTRIBUTE_LOG_APPEND_TIME,
    ATTRIBUTE_RECORD_HEADERS,
    HEADER_KEY_BYTES_MAX,
    HEADER_SIZE,
    INT32,
    MAGIC,
    MIN_BATCH_LENGTH,
    RECORD_HEAD,
    RECORD_HEADERS_MAX,
    BatchHeader,
    CorruptRecordError,
    read_header,
)
from .compression import expanded_batch
from .validation import validate_batch


class DecodedRecord(NamedTuple):
    """One record as a consumer sees it. `timestamp_ms` is the producer's create time, or with
    `TimestampType.LOG_APPEND_TIME` the time the leader appended the batch; `headers` are
    (key, value) pairs in the order sent, a value None when null. A named tuple, which a decode
    builds straight from a tuple (`_new_tuple`): one is built per record read."""

    offset: int
    key: bytes | None
    value: bytes | None  # None: a tombstone (a compacted topic's delete of `key`)
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_type: TimestampType = TimestampType.CREATE_TIME


_new_tuple = tuple.__new__
_CREATE_TIME = TimestampType.CREATE_TIME


class BatchScan:
    """Iterator of (position, header) over concatenated whole batches.

    Reads headers only (no CRC check) and stops cleanly at an incomplete tail:
    after iteration `stop_position` is where the whole batches end and
    `tail_bytes` how many bytes of an incomplete batch follow. A header that
    cannot start a batch (bad magic, impossible length) raises
    `CorruptRecordError`, since no later boundary can be trusted.
    """

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self._buf = buf
        self.stop_position = pos

    @property
    def tail_bytes(self) -> int:
        return len(self._buf) - self.stop_position

    def __iter__(self) -> BatchScan:
        return self

    def __next__(self) -> tuple[int, BatchHeader]:
        pos = self.stop_position
        if len(self._buf) - pos < HEADER_SIZE:
            raise StopIteration
        header = read_header(self._buf, pos)
        if header.magic != MAGIC or header.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"no batch at position {pos}: magic {header.magic}, batch_length {header.batch_length}"
            )
        if pos + header.size_bytes > len(self._buf):
            raise StopIteration
        self.stop_position = pos + header.size_bytes
        return pos, header


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchScan:
    """Walk the batches in `buf` from `pos`; see `BatchScan` for where it stops."""
    return BatchScan(buf, pos)


def decode_records(
    buf: bytes | bytearray | memoryview,
    start_offset: int = 0,
    *,
    verify_crc: bool = True,
    record_type: type[tuple] = DecodedRecord,
    prefix: tuple = (),
) -> list:
    """The records of the whole batches in `buf`, skipping those below `start_offset`.

    An incomplete batch at the end is ignored (a reader may have cut a fetch
    short); a corrupt batch raises `CorruptRecordError`. Each record is a `record_type`, a named
    tuple whose fields are `prefix`'s, then DecodedRecord's (the consumer's record type puts
    topic and partition first, and gets its records built with no copy in between).
    """
    data = buf if isinstance(buf, bytes) else bytes(buf)
    out: list[DecodedRecord] = []
    for pos, header in iter_batches(data):
        if header.last_offset < start_offset:
            continue
        if verify_crc:
            validate_batch(data, pos, check_records=False)
        batch, at = data, pos
        if header.attributes & ATTRIBUTE_COMPRESSION_MASK:
            (batch, header), at = expanded_batch(data, pos, header), 0  # then read as an uncompressed batch
        if header.attributes:
            _decode_batch_records_with_attributes(batch, at, header, start_offset, out, record_type, prefix)
        elif not _decode_uniform_records(batch, at, header, start_offset, out, record_type, prefix):
            _decode_batch_records(batch, at, header, start_offset, out, record_type, prefix)
    return out


@functools.lru_cache(maxsize=64)
def _uniform_record(key_len: int, value_len: int) -> struct.Struct:
    """One record of a batch whose records all have this key and value length, as fields:
    offset delta, timestamp delta, key length, [key,] value length, value."""
    key = f"{key_len}s" if key_len >= 0 else ""
    return struct.Struct(f">iqi{key}i{value_len}s")


def _decode_uniform_records(
    data: bytes, pos: int, header: BatchHeader, start_offset: int, out: list, record_type: type[tuple], prefix: tuple
) -> bool:
    """`_decode_batch_records` for a batch whose records all have one key length and one value length
    (a producer's usual batch), unpacked by one struct at C speed; False (nothing decoded) for any
    other batch. Exact: each record's key and value length fields are checked to be the first
    record's, so each record is the stride long and the next starts where the stride says."""
    start = pos + HEADER_SIZE
    end = pos + header.size_bytes
    count = header.record_count
    if end - start < RECORD_HEAD.size + INT32.size:
        return False
    _, _, key_len = RECORD_HEAD.unpack_from(data, start)
    if key_len < -1:
        return False
    value_len_at = RECORD_HEAD.size + max(key_len, 0)
    if start + value_len_at + INT32.size > end:
        return False
    (value_len,) = INT32.unpack_from(data, start + value_len_at)
    stride = value_len_at + INT32.size + value_len
    if value_len < 0 or stride * count != end - start:
        return False
    area = data[start:end]
    for at, field in ((RECORD_HEAD.size - INT32.size, INT32.pack(key_len)), (value_len_at, INT32.pack(value_len))):
        for j in range(INT32.size):
            if area[at + j :: stride] != field[j : j + 1] * count:
                return False
    base_offset = header.base_offset
    base_timestamp_ms = header.base_timestamp_ms
    fields = _uniform_record(key_len, value_len).iter_unpack(area)
    if key_len < 0:
        decoded = [_new_tuple(record_type, prefix + (base_offset + od, None, value, base_timestamp_ms + td, (),
                                                      _CREATE_TIME)) for od, td, _, _, value in fields]
    else:
        decoded = [_new_tuple(record_type, prefix + (base_offset + od, key, value, base_timestamp_ms + td, (),
                                                     _CREATE_TIME)) for od, td, _, key, _, value in fields]
    if base_offset < start_offset:
        at = len(prefix)
        decoded = [r for r in decoded if r[at] >= start_offset]
    out += decoded
    return True


def _decode_batch_records(
    data: bytes, pos: int, header: BatchHeader, start_offset: int, out: list, record_type: type[tuple], prefix: tuple
) -> None:
    end = pos + header.size_bytes
    p = pos + HEADER_SIZE
    unpack_head = RECORD_HEAD.unpack_from
    unpack_int32 = INT32.unpack_from
    base_offset = header.base_offset
    base_timestamp_ms = header.base_timestamp_ms
    append = out.append
    try:
        for _ in range(header.record_count):
            offset_delta, timestamp_delta_ms, key_len = unpack_head(data, p)
            p += 16
            if key_len < 0:
                key = None
            else:
                key = data[p : p + key_len]
                p += key_len
            (value_len,) = unpack_int32(data, p)
            p += 4
            if value_len >= 0:
                value = data[p : p + value_len]
                p += value_len
            elif value_len == -1:
                value = None  # a tombstone
            else:
                raise CorruptRecordError(f"batch at position {pos}: value_len {value_len}")
            offset = base_offset + offset_delta
            if offset >= start_offset:
                stamp_ms = base_timestamp_ms + timestamp_delta_ms
                append(_new_tuple(record_type, prefix + (offset, key, value, stamp_ms, (), _CREATE_TIME)))
    except struct.error as exc:
        raise CorruptRecordError(f"batch at position {pos}: records run past the batch end") from exc
    if p != end:
        raise CorruptRecordError(f"batch at position {pos}: records do not fill the batch exactly")


def _decode_batch_records_with_attributes(
    data: bytes, pos: int, header: BatchHeader, start_offset: int, out: list, record_type: type[tuple], prefix: tuple
) -> None:
    """`_decode_batch_records` for a batch with attributes set: header sections, a LogAppendTime."""
    end = pos + header.size_bytes
    p = pos + HEADER_SIZE
    with_headers = header.attributes & ATTRIBUTE_RECORD_HEADERS
    log_append_time = header.attributes & ATTRIBUTE_LOG_APPEND_TIME
    base_timestamp_ms = header.base_timestamp_ms
    stamp_type = TimestampType.LOG_APPEND_TIME if log_append_time else TimestampType.CREATE_TIME
    try:
        for _ in range(header.record_count):
            offset_delta, timestamp_delta_ms, key_len = RECORD_HEAD.unpack_from(data, p)
            p += RECORD_HEAD.size
            key = None if key_len < 0 else data[p : p + key_len]
            p += max(key_len, 0)
            (value_len,) = INT32.unpack_from(data, p)
            if value_len < -1:
                raise CorruptRecordError(f"batch at position {pos}: value_len {value_len}")
            p += INT32.size
            value = None if value_len < 0 else data[p : p + value_len]  # None: a tombstone
            p += max(value_len, 0)
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if with_headers:
                headers, p = _decode_headers(data, p, pos)
            offset = header.base_offset + offset_delta
            if offset >= start_offset:
                timestamp_ms = header.max_timestamp_ms if log_append_time else base_timestamp_ms + timestamp_delta_ms
                out.append(record_type(*prefix, offset, key, value, timestamp_ms, headers, stamp_type))
    except struct.error as exc:
        raise CorruptRecordError(f"batch at position {pos}: records run past the batch end") from exc
    if p != end:
        raise CorruptRecordError(f"batch at position {pos}: records do not fill the batch exactly")


def _decode_headers(data: bytes, p: int, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """The header section at `p` and the position after it. The leader validated it before appending
    it; a reader that did not check the records (`verify_crc` checks the CRC only) is still kept
    within the bounds, so that bad bytes raise rather than loop or slice backwards."""
    (count,) = INT32.unpack_from(data, p)
    p += INT32.size
    if not 0 <= count <= RECORD_HEADERS_MAX:
        raise CorruptRecordError(f"batch at position {pos}: header count {count}")
    headers = []
    for _ in range(count):
        (key_len,) = INT32.unpack_from(data, p)
        p += INT32.size
        if not 0 < key_len <= HEADER_KEY_BYTES_MAX:
            raise CorruptRecordError(f"batch at position {pos}: header key_len {key_len}")
        try:
            key = data[p : p + key_len].decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError(f"batch at position {pos}: a header key is not UTF-8") from None
        p += key_len
        (value_len,) = INT32.unpack_from(data, p)
        p += INT32.size
        if value_len < -1:
            raise CorruptRecordError(f"batch at position {pos}: header value_len {value_len}")
        value = None if value_len < 0 else data[p : p + value_len]
        p += max(value_len, 0)
        headers.append((key, value))
    if p > len(data):
        raise CorruptRecordError(f"batch at position {pos}: headers run past the batch end")
    return tuple(headers), p
