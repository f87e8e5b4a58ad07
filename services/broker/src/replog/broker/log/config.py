"""Settings of one partition log (docs/architecture.md, "Storage").

Sizes are in bytes, times in milliseconds; `None` switches a policy off.
"""

from __future__ import annotations

from dataclasses import dataclass

# Positions in a segment are stored as uint32 and offsets relative to the
# segment base as int32, so a segment (and a batch) stays below 2 GiB.
SEGMENT_BYTES_MAX = 2**31 - 1


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 64 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_batch_bytes: int = 1024 * 1024
    flush_messages: int | None = None  # fsync after this many appended records (None: not by count)
    flush_interval_ms: int | None = None  # fsync when this long since the last (None: not by time)
    retention_ms: int | None = None  # delete segments whose newest record is older (None: keep)
    retention_bytes: int | None = None  # delete oldest segments while the log stays above (None: keep)
    # fsync a segment when it is rolled, inside the append that rolls it. False: the
    # owner fsyncs rolled segments later, off the append path, through
    # `PartitionLog.rolled_segments_to_sync` (a broker does, so a whole segment's fsync does
    # not stall the partition's produce and fetch, docs/perf/rolled-segment-fsync.md); open
    # such a log with a recovery point.
    fsync_on_roll: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.segment_bytes <= SEGMENT_BYTES_MAX:
            raise ValueError(f"segment_bytes must be in (0, {SEGMENT_BYTES_MAX}], got {self.segment_bytes}")
        if self.index_interval_bytes <= 0:
            raise ValueError(f"index_interval_bytes must be positive, got {self.index_interval_bytes}")
        if not 0 < self.max_batch_bytes <= SEGMENT_BYTES_MAX:
            raise ValueError(f"max_batch_bytes must be in (0, {SEGMENT_BYTES_MAX}], got {self.max_batch_bytes}")
        for name in ("flush_messages", "flush_interval_ms", "retention_bytes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")
        if self.retention_ms is not None and self.retention_ms < 0:
            raise ValueError(f"retention_ms must be >= 0 or None, got {self.retention_ms}")
