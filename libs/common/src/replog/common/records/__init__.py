"""Record batches: the format every producer, broker and consumer shares.

- `batch.py`: the format itself (the layout, its structs and sizes, the header, the
  errors) and the leader's stamping of offsets and epoch;
- `builder.py`: encoding records into a batch;
- `validation.py`: checking that bytes are a well-formed batch;
- `reading.py`: walking the batches in a buffer and decoding their records.

Import from here; the modules are how the package is organised, not separate APIs.
"""

from .batch import (
    BATCH_LENGTH_MAX,
    CRC_START,
    HEADER_SIZE,
    LENGTH_FIELDS_SIZE,
    MAGIC,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptRecordError,
    RecordBatchError,
    RecordTooLargeError,
    read_header,
    with_offset_and_epoch,
)
from .builder import BatchBuilder, encode_batch
from .reading import BatchScan, DecodedRecord, decode_records, iter_batches
from .validation import check_batch, validate_batch

__all__ = [
    "BATCH_LENGTH_MAX",
    "CRC_START",
    "HEADER_SIZE",
    "LENGTH_FIELDS_SIZE",
    "MAGIC",
    "MIN_BATCH_LENGTH",
    "BatchBuilder",
    "BatchHeader",
    "BatchScan",
    "CorruptRecordError",
    "DecodedRecord",
    "RecordBatchError",
    "RecordTooLargeError",
    "check_batch",
    "decode_records",
    "encode_batch",
    "iter_batches",
    "read_header",
    "validate_batch",
    "with_offset_and_epoch",
]
