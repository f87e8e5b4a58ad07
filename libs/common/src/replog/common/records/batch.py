"""The record batch format: the one place that knows how batches are laid out.

Producers build batches (`builder.py`), the leader validates them (`validation.py`) and
stamps its offsets and leader epoch (`with_offset_and_epoch`, here), followers and the log
walk them and consumers decode them (`reading.py`). This module holds the layout: its
structs, sizes, header and errors. Everything in the package is pure: bytes in, values out,
no I/O. Integers are big-endian and fixed-width (precompiled `struct.Struct`s), so parsing
is a handful of `unpack_from` calls.

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

import struct
from typing import NamedTuple

MAGIC = 2

# base_offset, batch_length, partition_leader_epoch, magic, crc
PREFIX = struct.Struct(">qiibI")
# attributes, last_offset_delta, base_timestamp_ms, max_timestamp_ms,
# producer_id, producer_epoch, base_sequence, record_count
CRC_COVERED = struct.Struct(">hiqqqhii")
HEADER = struct.Struct(">qiibIhiqqqhii")
# offset_delta, timestamp_delta_ms, key_len
RECORD_HEAD = struct.Struct(">iqi")
# offset_delta, timestamp_delta_ms, key_len (= -1), value_len: a null-key record head
RECORD_HEAD_NULL_KEY = struct.Struct(">iqii")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")

HEADER_SIZE = HEADER.size  # 61
LENGTH_FIELDS_SIZE = 12  # base_offset + batch_length: the bytes not counted in batch_length
CRC_START = PREFIX.size  # 21: the CRC covers [CRC_START, batch end)
MIN_BATCH_LENGTH = HEADER_SIZE - LENGTH_FIELDS_SIZE  # a batch with no record bytes at all
BATCH_LENGTH_MAX = 2**31 - 1
_BATCH_LENGTH_OFFSET = 8
_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16

assert HEADER_SIZE == 61 and CRC_START == 21 and RECORD_HEAD.size == 16


class RecordBatchError(Exception):
    """Base class of the errors a batch can cause."""


class CorruptRecordError(RecordBatchError):
    """The bytes are not a well-formed batch (bad magic, length, CRC or records)."""


class RecordTooLargeError(RecordBatchError):
    """A well-formed batch that is larger than the limit it was checked against."""


_new_tuple = tuple.__new__  # a named tuple from a tuple of its fields, without a call per field


class BatchHeader(NamedTuple):
    """A batch's header fields, in wire order. A named tuple, built straight from the struct's
    tuple: one is built for every batch appended or replicated (docs/perf/batch-header-tuple.md)."""

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


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The header of the batch at `pos`, parsed but not checked."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"batch header at position {pos} needs {HEADER_SIZE} bytes, {len(buf) - pos} available"
        )
    return _new_tuple(BatchHeader, HEADER.unpack_from(buf, pos))


def with_offset_and_epoch(batch: bytes | bytearray | memoryview, base_offset: int, leader_epoch: int) -> bytes:
    """A copy of `batch` with base_offset and partition_leader_epoch set; the CRC stays valid."""
    view = memoryview(batch)
    return b"".join(
        (
            INT64.pack(base_offset),
            view[_BATCH_LENGTH_OFFSET:_LEADER_EPOCH_OFFSET],
            INT32.pack(leader_epoch),
            view[_MAGIC_OFFSET:],
        )
    )
