"""Record batches: the format every producer, broker and consumer shares.

- `batch.py`: the format itself (the layout, its structs and sizes, the header, the
  errors) and the leader's stamping of offsets and epoch;
- `builder.py`: encoding records into a batch;
- `validation.py`: checking that bytes are a well-formed batch;
- `reading.py`: walking the batches in a buffer and decoding their records;
- `compression.py`: the codecs of compressed batches (attribute bits 0-2).

docs/record-format.md describes the format for writers in any language.

Import from here; the modules are how the package is organised, not separate APIs.
"""

from replog.common.core.timestamp_type import TimestampType  # the timestamp types the format's attributes say

from .batch import (
    ATTRIBUTE_COMPRESSION_MASK,
    ATTRIBUTE_LOG_APPEND_TIME,
    ATTRIBUTE_RECORD_HEADERS,
    BATCH_LENGTH_MAX,
    CRC_START,
    HEADER_KEY_BYTES_MAX,
    HEADER_SIZE,
    LENGTH_FIELDS_SIZE,
    MAGIC,
    MIN_BATCH_LENGTH,
    RECORD_HEADERS_MAX,
    BatchHeader,
    CorruptRecordError,
    RecordBatchError,
    RecordTooLargeError,
    read_header,
    with_log_append_time,
    with_offset_and_epoch,
)
from .compression import (
    CODEC_NAMES,
    CODECS,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    EXPANDED_BYTES_MAX,
    UnsupportedCompressionError,
    codec_of,
    recompressed,
)
from .builder import BatchBuilder, Headers, encode_batch, encode_empty_batch, encode_headers
from .reading import BatchScan, DecodedRecord, decode_records, iter_batches
from .validation import check_batch, validate_batch

__all__ = [
    "ATTRIBUTE_COMPRESSION_MASK",
    "CODECS",
    "CODEC_NAMES",
    "COMPRESSION_GZIP",
    "COMPRESSION_LZ4",
    "COMPRESSION_NONE",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_ZSTD",
    "EXPANDED_BYTES_MAX",
    "UnsupportedCompressionError",
    "codec_of",
    "recompressed",
    "ATTRIBUTE_LOG_APPEND_TIME",
    "ATTRIBUTE_RECORD_HEADERS",
    "BATCH_LENGTH_MAX",
    "CRC_START",
    "HEADER_KEY_BYTES_MAX",
    "HEADER_SIZE",
    "LENGTH_FIELDS_SIZE",
    "MAGIC",
    "MIN_BATCH_LENGTH",
    "RECORD_HEADERS_MAX",
    "BatchBuilder",
    "BatchHeader",
    "BatchScan",
    "CorruptRecordError",
    "DecodedRecord",
    "Headers",
    "RecordBatchError",
    "RecordTooLargeError",
    "TimestampType",
    "check_batch",
    "decode_records",
    "encode_batch",
    "encode_empty_batch",
    "encode_headers",
    "iter_batches",
    "read_header",
    "validate_batch",
    "with_log_append_time",
    "with_offset_and_epoch",
]
