"""Encoding a record batch: `BatchBuilder` writes records as they arrive, `encode_batch` all at once.

The layout is batch.py's. The CRC is computed here, once per batch, over the bytes from
`attributes` to the end; nothing downstream rewrites it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from crc32c import crc32c

from .batch import (
    BATCH_LENGTH_MAX,
    CRC_COVERED,
    INT32,
    MAGIC,
    MIN_BATCH_LENGTH,
    PREFIX,
    RECORD_HEAD,
    RECORD_HEAD_NULL_KEY,
    RecordTooLargeError,
)


class BatchBuilder:
    """A batch encoded as its records arrive: `add_many` writes each record's bytes at once, so
    `build` only lays down the header and the CRC. A producer adds records while a request of
    the partition is in flight and builds the batch the moment it may send, so the per-record
    work is not on the path from one answer to the next request (docs/perf/batch-builder.md).

    The first record's timestamp is the batch's base; a later one may be earlier (its delta is
    then negative), as in `encode_batch`."""

    __slots__ = ("_parts", "count", "_base_timestamp_ms", "_max_timestamp_ms")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.count = 0
        self._base_timestamp_ms = 0
        self._max_timestamp_ms = 0

    def add_many(self, records: Iterable[tuple[bytes | None, bytes, int]]) -> BatchBuilder:
        """Append records, each (key, value, timestamp_ms); key may be None."""
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
            if key is None:
                append(pack_head_null_key(offset_delta, timestamp_ms - base_timestamp_ms, -1, len(value)))
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

    def build(self, *, base_offset: int = 0, leader_epoch: int = -1, producer_id: int = -1,
              producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
        """The batch of every record added so far (the builder may go on, for a larger batch)."""
        record_count = self.count
        if record_count == 0:
            raise ValueError("a batch holds at least one record")
        body = b"".join(self._parts)
        if len(self._parts) > 1:
            self._parts[:] = [body]  # a later build joins once more, not every record again
        covered_head = CRC_COVERED.pack(
            0,
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


def encode_batch(
    records: Sequence[tuple[bytes | None, bytes, int]],
    *,
    base_offset: int = 0,
    leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """One batch holding `records`, each (key, value, timestamp_ms); key may be None (ValueError if
    there are none, from `BatchBuilder.build`)."""
    return BatchBuilder().add_many(records).build(
        base_offset=base_offset, leader_epoch=leader_epoch, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence)
