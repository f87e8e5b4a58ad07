"""The broker's storage: one segmented log per partition replica (docs/architecture.md, "Storage").

Pure file I/O: no gRPC, no ZooKeeper, no threads. One job per module:

- partition_log.py      `PartitionLog`: appends, reads, truncation, the epoch cache, flushing
- log_start.py          its log start offset: retention, DeleteRecords, a follower taking its leader's
- segments.py           the segment files in offset order: roll, read across, cut, rolled ones awaiting fsync
- segment.py            one `<base>.log` file of whole batches and its index
- segment_scan.py       a segment read batch by batch: where valid data ends, and what is wrong
- offset_index.py       the sparse offset -> position index (`<base>.index`)
- recovery.py           opening a log's files: leftovers removed, the tail validated, the epoch cache repaired
- leader_epoch_cache.py leader_epoch -> start offset, KIP-101 end offsets (pure)
- flush_policy.py       when to fsync (pure)
- retention.py          which old segments to delete (pure)
- compaction.py         what the log cleaner keeps of a compacted log: key map, dirty ratio, tombstones (pure)
- cleaner.py            one cleaning pass: segments rewritten with their offsets, swapped in crash-safely
- checkpoints.py        atomic versioned text files (HW, recovery points, log starts, epochs)
- clean_shutdown.py     the clean-shutdown marker; committed records recovery could not find
- config.py             a log's settings, and a topic's overrides laid over the broker's defaults

The batch format itself belongs to `replog.common.records`.
"""

from replog.common.records import CorruptRecordError, RecordTooLargeError

from .checkpoints import (
    HW_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    CheckpointError,
    read_offsets_checkpoint,
    write_offsets_checkpoint,
)
from .clean_shutdown import (
    CLEAN_SHUTDOWN_FILE,
    LostRecords,
    lost_committed_records,
    take_clean_shutdown_marker,
    write_clean_shutdown_marker,
)
from .config import LogConfig
from .errors import CorruptLogError, LogError, LogOffsetMismatchError, OffsetOutOfRangeError
from .partition_log import PartitionLog
from .results import AppendInfo, CorruptionReport, RecoveryReport

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LostRecords",
    "lost_committed_records",
    "take_clean_shutdown_marker",
    "write_clean_shutdown_marker",
    "HW_CHECKPOINT_FILE",
    "LEADER_EPOCH_CHECKPOINT_FILE",
    "LOG_START_OFFSET_CHECKPOINT_FILE",
    "RECOVERY_POINT_CHECKPOINT_FILE",
    "AppendInfo",
    "CheckpointError",
    "CorruptLogError",
    "CorruptRecordError",
    "CorruptionReport",
    "LogConfig",
    "LogError",
    "LogOffsetMismatchError",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "RecordTooLargeError",
    "RecoveryReport",
    "read_offsets_checkpoint",
    "write_offsets_checkpoint",
]
