"""The record batch format: the one place that knows how batches are laid out.

Theory of operation
-------------------
Producers build batches (`encode_batch`), the leader validates them
(`validate_batch`) and stamps its offsets and leader epoch
(`with_offset_and_epoch`), followers and the log walk them (`iter_batches`),
consumers decode them (`decode_records`). Everything here is pure: bytes in,
values out, no I/O. Integers are big-endian and fixed-width (precompiled
`struct.Struct`s), so parsing is a handful of `unpack_from` calls.

Batch layout (offsets in bytes; the shape of Kafka's v2 batch)::

     0  base_offset             int64   assigned by the leader    } outside
     8  batch_length            int32   bytes after this field    } the CRC
    12  partition_leader_epoch  int32   stamped by the leader     }
    16  magic                   int8    = 2                       }
    17  crc                     uint32  CRC-32C of bytes 21..end  }
    21  attributes              int16   0 (reserved)
    23  last_offset_delta       int32   record_count - 1
    27  base_timestamp_ms       int64   timestamp of the first record
    35  max_timestamp_ms        int64
    43  producer_id             int64   -1 when not idempotent
    51  producer_epoch          int16   -1
    53  base_sequence           int32   -1
    57  record_count            int32   >= 1
    61  records...

    record: offset_delta int32 | timestamp_delta_ms int64 | key_len int32
            (-1 = null key) | key | value_len int32 | value

The total size of a batch is 12 + batch_length. The CRC starts at
`attributes` so that the leader can assign `base_offset` and stamp
`partition_leader_epoch` without recomputing it: a batch's CRC is computed
once by its producer and then checked, never rewritten, all the way to the
consumer. Timestamp deltas are int64 so that no client-supplied timestamp
spread can overflow them.

Errors: `CorruptRecordError` (the bytes are not a well-formed batch) and
`RecordTooLargeError` (well-formed but over a size limit) are different
types because a broker answers them with different error codes.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from crc32c import crc32c

MAGIC = 2

# base_offset, batch_length, partition_leader_epoch, magic, crc
_PREFIX = struct.Struct(">qiibI")
# attributes, last_offset_delta, base_timestamp_ms, max_timestamp_ms,
# producer_id, producer_epoch, base_sequence, record_count
_CRC_COVERED = struct.Struct(">hiqqqhii")
_HEADER = struct.Struct(">qiibIhiqqqhii")
# offset_delta, timestamp_delta_ms, key_len
_RECORD_HEAD = struct.Struct(">iqi")
# offset_delta, timestamp_delta_ms, key_len (= -1), value_len: a null-key record head
_RECORD_HEAD_NULL_KEY = struct.Struct(">iqii")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

HEADER_SIZE = _HEADER.size  # 61
LENGTH_FIELDS_SIZE = 12  # base_offset + batch_length: the bytes not counted in batch_length
CRC_START = _PREFIX.size  # 21: the CRC covers [CRC_START, batch end)
MIN_BATCH_LENGTH = HEADER_SIZE - LENGTH_FIELDS_SIZE  # a batch with no record bytes at all
BATCH_LENGTH_MAX = 2**31 - 1
_BATCH_LENGTH_OFFSET = 8
_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16

assert HEADER_SIZE == 61 and CRC_START == 21 and _RECORD_HEAD.size == 16


class RecordBatchError(Exception):
    """Base class of the errors a batch can cause."""


class CorruptRecordError(RecordBatchError):
    """The bytes are not a well-formed batch (bad magic, length, CRC or records)."""


class RecordTooLargeError(RecordBatchError):
    """A well-formed batch that is larger than the limit it was checked against."""


_new_tuple = tuple.__new__  # a named tuple from a tuple of its fields, without a call per field


class BatchHeader(NamedTuple):
    """A batch's header fields, in wire order. A named tuple: built for every batch appended or
    replicated, straight from the struct's tuple (a 13-field slotted dataclass took 1.7 us)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp_ms: int
    max_timestamp_ms: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size_bytes(self) -> int:
        """Bytes the whole batch takes, header included."""
        return LENGTH_FIELDS_SIZE + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    def stamped(self, base_offset: int, leader_epoch: int) -> BatchHeader:
        """This header with the base offset and leader epoch a leader gives its batch (the fields
        `with_offset_and_epoch` rewrites; the CRC does not cover them)."""
        return _new_tuple(BatchHeader, (base_offset, self.batch_length, leader_epoch) + self[3:])


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int


class BatchBuilder:
    """A batch encoded as its records arrive: `add_many` writes each record's bytes at once, so
    `build` only lays down the header and the CRC. A producer adds records while a request of
    the partition is in flight and builds the batch the moment it may send, so the per-record
    work is not on the path from one answer to the next request.

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
        pack_head = _RECORD_HEAD.pack
        pack_head_null_key = _RECORD_HEAD_NULL_KEY.pack
        pack_int32 = _INT32.pack
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
        covered_head = _CRC_COVERED.pack(
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
        prefix = _PREFIX.pack(base_offset, batch_length, leader_epoch, MAGIC, crc)
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


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The header of the batch at `pos`, parsed but not checked."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"batch header at position {pos} needs {HEADER_SIZE} bytes, {len(buf) - pos} available"
        )
    return _new_tuple(BatchHeader, _HEADER.unpack_from(buf, pos))


def validate_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_bytes: int | None = None,
    check_records: bool = True,
) -> BatchHeader:
    """Check the batch at `pos` and return its header.

    Checks magic, length bounds (against `buf` and `max_bytes`), the CRC, the
    record count, and with `check_records` that the records exactly fill the
    batch with offset deltas 0..n-1 and the stated max timestamp. Raises
    `RecordTooLargeError` or `CorruptRecordError` saying what is wrong.
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
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise CorruptRecordError(
            f"batch at position {pos}: record_count {header.record_count} and "
            f"last_offset_delta {header.last_offset_delta} are inconsistent"
        )
    if check_records:
        _check_records(buf, pos, header)
    return header


def _check_records(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """The records must exactly fill the batch, in offset order, within its max timestamp."""
    if _uniform_records_are_valid(buf, pos, header):
        return
    end = pos + header.size_bytes
    p = pos + HEADER_SIZE
    unpack_head = _RECORD_HEAD.unpack_from
    unpack_int32 = _INT32.unpack_from
    max_timestamp_delta_ms = None
    for expected_delta in range(header.record_count):
        if p + _RECORD_HEAD.size + _INT32.size > end:
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
        p += _RECORD_HEAD.size + max(key_len, 0)
        if p + _INT32.size > end:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} runs past the batch end")
        (value_len,) = unpack_int32(buf, p)
        if value_len < 0:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} has value_len {value_len}")
        p += _INT32.size + value_len
        if p > end:
            raise CorruptRecordError(f"batch at position {pos}: record {expected_delta} runs past the batch end")
    if p != end:
        raise CorruptRecordError(f"batch at position {pos}: {end - p} bytes follow the last record")
    assert max_timestamp_delta_ms is not None
    if header.base_timestamp_ms + max_timestamp_delta_ms != header.max_timestamp_ms:
        raise CorruptRecordError(
            f"batch at position {pos}: max_timestamp_ms {header.max_timestamp_ms} is not the "
            f"largest record timestamp {header.base_timestamp_ms + max_timestamp_delta_ms}"
        )


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
# _TIMESTAMP_CHUNK of them per record size). A cache keyed by the exact count, as this
# once was, missed often and rebuilt every column at several times the check's cost.
_KEY_LEN_AT = _RECORD_HEAD.size - _INT32.size  # a record's key_len, after offset_delta and timestamp_delta
_TIMESTAMP_CHUNK = 256  # records whose timestamp deltas one unpack reads
_TIMESTAMP_UNPACKERS_MAX = 64
_COLUMNS_MIN = 1024  # records the columns of a layout cover at least (then a power of two)


@functools.lru_cache(maxsize=16)
def _uniform_columns(key_len: int, value_len: int, size: int) -> tuple[tuple[int, bytes], ...]:
    """(byte position in a record, that byte of each of `size` records of one size), for every
    offset-delta, key-length and value-length byte; a batch of n records holds the first n of each."""
    value_len_at = _RECORD_HEAD.size + max(key_len, 0)
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
    if end - start < _RECORD_HEAD.size + _INT32.size:
        return False
    _, _, key_len = _RECORD_HEAD.unpack_from(buf, start)
    if key_len < -1:
        return False
    key_bytes = max(key_len, 0)
    if start + _RECORD_HEAD.size + key_bytes + _INT32.size > end:
        return False
    (value_len,) = _INT32.unpack_from(buf, start + _RECORD_HEAD.size + key_bytes)
    stride = _RECORD_HEAD.size + key_bytes + _INT32.size + value_len
    if value_len < 0 or stride * record_count != end - start:
        return False
    columns = _uniform_columns(key_len, value_len, max(_COLUMNS_MIN, 1 << (record_count - 1).bit_length()))
    area = bytes(memoryview(buf)[start:end])
    for at, column in columns:
        if area[at::stride] != column[:record_count]:
            return False
    return header.base_timestamp_ms + _max_timestamp_delta(area, stride, record_count) == header.max_timestamp_ms


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


def with_offset_and_epoch(batch: bytes | bytearray | memoryview, base_offset: int, leader_epoch: int) -> bytes:
    """A copy of `batch` with base_offset and partition_leader_epoch set; the CRC stays valid."""
    view = memoryview(batch)
    return b"".join(
        (
            _INT64.pack(base_offset),
            view[_BATCH_LENGTH_OFFSET:_LEADER_EPOCH_OFFSET],
            _INT32.pack(leader_epoch),
            view[_MAGIC_OFFSET:],
        )
    )


def decode_records(
    buf: bytes | bytearray | memoryview,
    start_offset: int = 0,
    *,
    verify_crc: bool = True,
) -> list[DecodedRecord]:
    """The records of the whole batches in `buf`, skipping those below `start_offset`.

    An incomplete batch at the end is ignored (a reader may have cut a fetch
    short); a corrupt batch raises `CorruptRecordError`.
    """
    data = buf if isinstance(buf, bytes) else bytes(buf)
    out: list[DecodedRecord] = []
    for pos, header in iter_batches(data):
        if header.last_offset < start_offset:
            continue
        if verify_crc:
            validate_batch(data, pos, check_records=False)
        _decode_batch_records(data, pos, header, start_offset, out)
    return out


def _decode_batch_records(
    data: bytes, pos: int, header: BatchHeader, start_offset: int, out: list[DecodedRecord]
) -> None:
    end = pos + header.size_bytes
    p = pos + HEADER_SIZE
    unpack_head = _RECORD_HEAD.unpack_from
    unpack_int32 = _INT32.unpack_from
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
            if value_len < 0:
                raise CorruptRecordError(f"batch at position {pos}: value_len {value_len}")
            p += 4
            value = data[p : p + value_len]
            p += value_len
            offset = base_offset + offset_delta
            if offset >= start_offset:
                append(DecodedRecord(offset, key, value, base_timestamp_ms + timestamp_delta_ms))
    except struct.error as exc:
        raise CorruptRecordError(f"batch at position {pos}: records run past the batch end") from exc
    if p != end:
        raise CorruptRecordError(f"batch at position {pos}: records do not fill the batch exactly")
