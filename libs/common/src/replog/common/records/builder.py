"""Encoding a record batch: `BatchBuilder` writes records as they arrive, `encode_batch` all at once.

The layout is batch.py's. The CRC is computed here, once per batch, over the bytes from
`attributes` to the end; nothing downstream rewrites it (but a LogAppendTime leader, batch.py).
With a codec (`compression`), the records are compressed as one block when the batch is built
(compression.py), and the CRC covers the compressed bytes.

Records with headers go through `add_many_with_headers`; a batch holds a header section
per record only once one of its records has headers, so `add_many`'s records cost what
they did before headers existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from crc32c import crc32c

from .batch import (
    ATTRIBUTE_RECORD_HEADERS,
    BATCH_LENGTH_MAX,
    CRC_COVERED,
    HEADER_KEY_BYTES_MAX,
    INT32,
    MAGIC,
    MIN_BATCH_LENGTH,
    PREFIX,
    RECORD_HEAD,
    RECORD_HEAD_NULL_KEY,
    RECORD_HEADERS_MAX,
    RecordTooLargeError,
)
from .compression import COMPRESSION_NONE, compress

# Record headers as callers give them: (key, value) pairs, value None for a null value; or a
# mapping of key to value.
Headers = Sequence[tuple[str, "bytes | None"]] | Mapping[str, "bytes | None"]
_NO_HEADERS = INT32.pack(0)


def encode_headers(headers: Headers | None) -> bytes:
    """A record's header section (count, then each header); ValueError / TypeError naming what
    is wrong with a header, before anything is written."""
    if not headers:
        return _NO_HEADERS
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    if len(pairs) > RECORD_HEADERS_MAX:
        raise ValueError(f"a record has {len(pairs)} headers, at most {RECORD_HEADERS_MAX} are allowed")
    parts = [INT32.pack(len(pairs))]
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"a header is a (key, value) pair, not {pair!r}")
        key, value = pair
        if not isinstance(key, str) or not key:
            raise TypeError(f"a header key is a non-empty str, not {key!r}")
        key_bytes = key.encode("utf-8")
        if len(key_bytes) > HEADER_KEY_BYTES_MAX:
            raise ValueError(f"header key {key[:40]!r}... is {len(key_bytes)} bytes, at most "
                             f"{HEADER_KEY_BYTES_MAX} are allowed")
        parts += (INT32.pack(len(key_bytes)), key_bytes)
        if value is None:
            parts.append(INT32.pack(-1))
        elif isinstance(value, (bytes, bytearray, memoryview)):
            parts += (INT32.pack(len(value)), bytes(value))
        else:
            raise TypeError(f"the value of header {key!r} is bytes or None, not {type(value).__name__}")
    return b"".join(parts)


_NULL_VALUE = INT32.pack(-1)


def _tombstone(key: bytes | None, offset_delta: int, timestamp_delta_ms: int) -> bytes:
    """A record whose value is null (value_len -1, no value bytes)."""
    if key is None:
        return RECORD_HEAD_NULL_KEY.pack(offset_delta, timestamp_delta_ms, -1, -1)
    return b"".join((RECORD_HEAD.pack(offset_delta, timestamp_delta_ms, len(key)), key, _NULL_VALUE))


class BatchBuilder:
    """A batch encoded as its records arrive: `add_many` writes each record's bytes at once, so
    `build` only lays down the header and the CRC. A producer adds records while a request of
    the partition is in flight and builds the batch the moment it may send, so the per-record
    work is not on the path from one answer to the next request (docs/perf/batch-builder.md).

    The first record's timestamp is the batch's base; a later one may be earlier (its delta is
    then negative), as in `encode_batch`."""

    __slots__ = ("_parts", "count", "_base_timestamp_ms", "_max_timestamp_ms", "_with_headers")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.count = 0
        self._base_timestamp_ms = 0
        self._max_timestamp_ms = 0
        self._with_headers = False

    def add(self, key: bytes | None, value: bytes | None, timestamp_ms: int) -> None:
        """Append one record without headers: `add_many` for a producer's one-record-per-call path.
        A value None is a tombstone (value_len -1): a compacted topic's delete of its key."""
        if self._with_headers:
            self.add_many_with_headers(((key, value, timestamp_ms, None),))
            return
        offset_delta = self.count
        if offset_delta == 0:
            self._base_timestamp_ms = self._max_timestamp_ms = timestamp_ms
        elif timestamp_ms > self._max_timestamp_ms:
            self._max_timestamp_ms = timestamp_ms
        parts = self._parts
        if value is None:
            parts.append(_tombstone(key, offset_delta, timestamp_ms - self._base_timestamp_ms))
        elif key is None:
            parts.append(RECORD_HEAD_NULL_KEY.pack(offset_delta, timestamp_ms - self._base_timestamp_ms, -1,
                                                   len(value)))
            parts.append(value)
        else:
            parts.append(RECORD_HEAD.pack(offset_delta, timestamp_ms - self._base_timestamp_ms, len(key)))
            parts.append(key)
            parts.append(INT32.pack(len(value)))
            parts.append(value)
        self.count = offset_delta + 1

    def add_many(self, records: Iterable[tuple[bytes | None, bytes | None, int]]) -> BatchBuilder:
        """Append records, each (key, value, timestamp_ms); key may be None, value None is a tombstone."""
        if self._with_headers:
            return self.add_many_with_headers([(key, value, stamp, None) for key, value, stamp in records])
        append = self._parts.append
        pack_head = RECORD_HEAD.pack
        pack_head_null_key = RECORD_HEAD_NULL_KEY.pack
        pack_int32 = INT32.pack
        offset_delta = self.count
        base_timestamp_ms = self._base_timestamp_ms
        max_timestamp_ms = self._max_timestamp_ms
        for key, value, timestamp_ms in records:
            if offset_delta == 0:
                base_timestamp_ms = max_timestamp_ms = timestamp_ms
            elif timestamp_ms > max_timestamp_ms:
                max_timestamp_ms = timestamp_ms
            if value is None:
                append(_tombstone(key, offset_delta, timestamp_ms - base_timestamp_ms))
            elif key is None:
                append(pack_head_null_key(offset_delta, timestamp_ms - base_timestamp_ms, -1, len(value)))
                append(value)
            else:
                append(pack_head(offset_delta, timestamp_ms - base_timestamp_ms, len(key)))
                append(key)
                append(pack_int32(len(value)))
                append(value)
            offset_delta += 1
        self.count = offset_delta
        self._base_timestamp_ms = base_timestamp_ms
        self._max_timestamp_ms = max_timestamp_ms
        return self

    def add_many_with_headers(
        self, records: Iterable[tuple[bytes | None, bytes | None, int, Headers | None]]
    ) -> BatchBuilder:
        """Append records, each (key, value, timestamp_ms, headers); key and headers may be None.
        Every header is checked before any record is added (ValueError / TypeError)."""
        records = list(records)
        sections = [encode_headers(headers) for _, _, _, headers in records]
        if not self._with_headers:
            self._add_header_sections()
        append = self._parts.append
        pack_int32 = INT32.pack
        offset_delta = self.count
        base_timestamp_ms = self._base_timestamp_ms
        max_timestamp_ms = self._max_timestamp_ms
        for (key, value, timestamp_ms, _), section in zip(records, sections):
            if offset_delta == 0:
                base_timestamp_ms = max_timestamp_ms = timestamp_ms
            elif timestamp_ms > max_timestamp_ms:
                max_timestamp_ms = timestamp_ms
            if value is None:
                append(_tombstone(key, offset_delta, timestamp_ms - base_timestamp_ms))
            elif key is None:
                append(RECORD_HEAD_NULL_KEY.pack(offset_delta, timestamp_ms - base_timestamp_ms, -1, len(value)))
                append(value)
            else:
                append(RECORD_HEAD.pack(offset_delta, timestamp_ms - base_timestamp_ms, len(key)))
                append(key)
                append(pack_int32(len(value)))
                append(value)
            append(section)
            offset_delta += 1
        self.count = offset_delta
        self._base_timestamp_ms = base_timestamp_ms
        self._max_timestamp_ms = max_timestamp_ms
        return self

    def _add_header_sections(self) -> None:
        """Switch to the layout with headers: each record added so far gets an empty section."""
        self._with_headers = True
        if not self.count:
            return
        body = b"".join(self._parts)
        parts, start = [], 0
        for _ in range(self.count):
            _, _, key_len = RECORD_HEAD.unpack_from(body, start)
            value_len_at = start + RECORD_HEAD.size + max(key_len, 0)
            (value_len,) = INT32.unpack_from(body, value_len_at)
            end = value_len_at + INT32.size + max(value_len, 0)
            parts += (body[start:end], _NO_HEADERS)
            start = end
        self._parts[:] = [b"".join(parts)]

    def build(self, *, base_offset: int = 0, leader_epoch: int = -1, producer_id: int = -1,
              producer_epoch: int = -1, base_sequence: int = -1, compression: int = COMPRESSION_NONE) -> bytes:
        """The batch of every record added so far (the builder may go on, for a larger batch), its records
        compressed with `compression` (a codec of compression.py) unless that is COMPRESSION_NONE."""
        record_count = self.count
        if record_count == 0:
            raise ValueError("a batch holds at least one record")
        body = b"".join(self._parts)
        if len(self._parts) > 1:
            self._parts[:] = [body]  # a later build joins once more, not every record again
        if compression != COMPRESSION_NONE:
            body = compress(compression, body)
        covered_head = CRC_COVERED.pack(
            (ATTRIBUTE_RECORD_HEADERS if self._with_headers else 0) | compression,
            record_count - 1,
            self._base_timestamp_ms,
            self._max_timestamp_ms,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
        crc = crc32c(body, crc32c(covered_head))
        batch_length = MIN_BATCH_LENGTH + len(body)
        if batch_length > BATCH_LENGTH_MAX:
            raise RecordTooLargeError(f"batch of {batch_length} bytes exceeds the format's limit")
        prefix = PREFIX.pack(base_offset, batch_length, leader_epoch, MAGIC, crc)
        return b"".join((prefix, covered_head, body))


def encode_empty_batch(*, base_offset: int, last_offset_delta: int, leader_epoch: int, timestamp_ms: int,
                       producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    """A batch holding no record over offsets [base_offset, base_offset + last_offset_delta] (batch.py): what
    the log cleaner keeps of a producer's latest batch whose records (or last records) went, for the producer's
    state."""
    assert last_offset_delta >= 0, last_offset_delta
    covered_head = CRC_COVERED.pack(0, last_offset_delta, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                                    base_sequence, 0)
    prefix = PREFIX.pack(base_offset, MIN_BATCH_LENGTH, leader_epoch, MAGIC, crc32c(covered_head))
    return prefix + covered_head


def encode_batch(
    records: Sequence[tuple[bytes | None, bytes, int] | tuple[bytes | None, bytes, int, Headers | None]],
    *,
    base_offset: int = 0,
    leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = COMPRESSION_NONE,
) -> bytes:
    """One batch holding `records`, each (key, value, timestamp_ms) or (key, value, timestamp_ms,
    headers); key and headers may be None (ValueError if there are no records, from
    `BatchBuilder.build`). The batch has a header section only if some record has headers; its
    records are compressed with `compression` (a codec of compression.py) unless that is none."""
    builder = BatchBuilder()
    if any(len(record) > 3 and record[3] for record in records):
        builder.add_many_with_headers([(*record[:3], record[3] if len(record) > 3 else None) for record in records])
    else:
        builder.add_many([record[:3] for record in records])
    return builder.build(
        base_offset=base_offset, leader_epoch=leader_epoch, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, compression=compression)
