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
    21  attributes              int16   flags, below
    23  last_offset_delta       int32   record_count - 1 (any >= 0 when empty)
    27  base_timestamp_ms       int64   timestamp of the first record
    35  max_timestamp_ms        int64
    43  producer_id             int64   -1 when not idempotent
    51  producer_epoch          int16   -1
    53  base_sequence           int32   -1
    57  record_count            int32   >= 1, or 0: an empty batch
    61  records...

    record: offset_delta int32 | timestamp_delta_ms int64 | key_len int32
            (-1 = null key) | key | value_len int32 | value
            [| header_count int32 | header * header_count]   with ATTRIBUTE_RECORD_HEADERS
    header: key_len int32 | key (UTF-8, non-empty) | value_len int32 (-1 = null value) | value

An empty batch (record_count 0, attributes 0, no byte after the header) is the log cleaner's
(`builder.encode_empty_batch`): what stays of an idempotent producer's latest batch once its records,
or its last ones, were compacted away, so the producer's last sequence and offset can still be read
from the log (Kafka does the same). Its offsets [base_offset, base_offset + last_offset_delta] hold no record;
a reader skips it and goes on at its next offset. A producer never sends one (its receiver refuses it).

Attributes (any other bit set is a corrupt batch):

- bits 0-2, the compression codec (Kafka's values: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7
  are refused as unsupported): the records section, every byte after the header, is that
  codec's compression of the records laid out as below. compression.py owns the codecs.
- `ATTRIBUTE_LOG_APPEND_TIME` (0x08, Kafka's timestamp-type bit): the leader stamped the
  batch when it appended it, and that time (base = max timestamp) is every record's
  timestamp; the records' own deltas are the producer's and are not read. Without it the
  timestamps are the producer's (CreateTime): base + each record's delta.
- `ATTRIBUTE_RECORD_HEADERS` (0x10): every record ends with a header section (a count,
  maybe 0, then the headers). A batch whose records have no headers leaves the bit clear
  and is laid out byte for byte as before headers existed, so batches already on disk
  (attributes 0) read unchanged, and a batch without headers costs what it always did.

The total size of a batch is 12 + batch_length. The CRC starts at
`attributes` so that the leader can assign `base_offset` and stamp
`partition_leader_epoch` without recomputing it: a batch's CRC is computed
once by its producer and then checked all the way to the consumer. The
exceptions are a topic with `message.timestamp.type=LogAppendTime`, where the
leader rewrites the attributes and the base and max timestamps before it
appends the batch (`with_log_append_time`), and a topic whose `compression.type`
is not `producer`, where it compresses the records with the topic's codec
(`compression.recompressed`): each computes the CRC anew, once, after the
producer's was validated. A producer never sets that bit
itself (the leader refuses a batch that does). Timestamp deltas are int64 so
that no client-supplied timestamp spread can overflow them.

Errors: `CorruptRecordError` (the bytes are not a well-formed batch) and
`RecordTooLargeError` (well-formed but over a size limit) are different
types because a broker answers them with different error codes.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

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

ATTRIBUTE_COMPRESSION_MASK = 0x07  # the codec (compression.py); 0: the records are as laid out above
ATTRIBUTE_LOG_APPEND_TIME = 0x08
ATTRIBUTE_RECORD_HEADERS = 0x10
ATTRIBUTES_KNOWN = ATTRIBUTE_COMPRESSION_MASK | ATTRIBUTE_LOG_APPEND_TIME | ATTRIBUTE_RECORD_HEADERS

# Bounds on record headers, checked by the builder and by validation: headers are metadata,
# and a record with thousands of them is a mistake better refused than stored.
RECORD_HEADERS_MAX = 256  # headers per record
HEADER_KEY_BYTES_MAX = 1024  # a header key's UTF-8 bytes; a value is bounded only by the batch size


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


def with_log_append_time(
    batch: bytes | bytearray | memoryview, header: BatchHeader, timestamp_ms: int
) -> tuple[bytes, BatchHeader]:
    """A copy of the validated `batch` (whose header is `header`) stamped with the leader's time:
    the log-append-time attribute set, base and max timestamp `timestamp_ms`, the CRC computed anew.
    The one rewrite of a CRC after its producer (see the module docstring)."""
    covered_head = CRC_COVERED.pack(
        header.attributes | ATTRIBUTE_LOG_APPEND_TIME,
        header.last_offset_delta,
        timestamp_ms,
        timestamp_ms,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.record_count,
    )
    body = memoryview(batch)[HEADER_SIZE : header.size_bytes]
    crc = crc32c(body, crc32c(covered_head))
    prefix = PREFIX.pack(header.base_offset, header.batch_length, header.partition_leader_epoch, header.magic, crc)
    stamped = _new_tuple(BatchHeader, HEADER.unpack_from(prefix + covered_head))
    return b"".join((prefix, covered_head, body)), stamped


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
