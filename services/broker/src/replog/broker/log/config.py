"""Settings of one partition log (docs/architecture.md, "Storage").

Sizes are in bytes, times in milliseconds; `None` switches a policy off.
A broker builds one `LogConfig` of its defaults and, per topic, lays the
topic's overrides (`/config/topics/<topic>`, Kafka's key names) over it with
`with_topic_overrides`; `TOPIC_KEYS` is the one map from those keys to the
fields they set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from replog.common.core.topic_config import CLEANUP_COMPACT, CLEANUP_DELETE, TopicConfig, parse_value

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
    segment_ms: int | None = None  # roll the active segment once it is this old (None: by size only)
    # fsync a segment when it is rolled, inside the append that rolls it. False: the
    # owner fsyncs rolled segments later, off the append path, through
    # `PartitionLog.rolled_segments_to_sync` (a broker does, so a whole segment's fsync does
    # not stall the partition's produce and fetch, docs/perf/rolled-segment-fsync.md); open
    # such a log with a recovery point.
    fsync_on_roll: bool = True
    # Remove the files of segments retention or a new log start deleted at once. False: they are
    # renamed aside (`<name>.deleted.tmp`, a leftover recovery removes) and the owner removes them
    # later, without holding the log (`take_set_aside_files`, `remove_set_aside_files`): an unlink and
    # a directory fsync may take long on a busy disk, and the partition's produce would wait on them.
    remove_deleted_at_once: bool = True
    # Compaction (cleaner.py; Kafka's names): `cleanup_policy` is delete, compact or compact,delete; with
    # compact the cleaner keeps the latest record of each key in the rolled segments once the dirty part
    # (not cleaned yet) is `min_cleanable_dirty_ratio` of them, or its oldest record is `max_compaction_lag_ms`
    # old; a record younger than `min_compaction_lag_ms` is not cleaned yet; a tombstone (null value) goes
    # `delete_retention_ms` after its timestamp. Retention deletes only under a policy with delete.
    cleanup_policy: str = CLEANUP_DELETE
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    delete_retention_ms: int = 24 * 3600 * 1000

    @property
    def compacts(self) -> bool:
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @property
    def deletes(self) -> bool:
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    def __post_init__(self) -> None:
        if not 0 < self.segment_bytes <= SEGMENT_BYTES_MAX:
            raise ValueError(f"segment_bytes must be in (0, {SEGMENT_BYTES_MAX}], got {self.segment_bytes}")
        if self.index_interval_bytes <= 0:
            raise ValueError(f"index_interval_bytes must be positive, got {self.index_interval_bytes}")
        if not 0 < self.max_batch_bytes <= SEGMENT_BYTES_MAX:
            raise ValueError(f"max_batch_bytes must be in (0, {SEGMENT_BYTES_MAX}], got {self.max_batch_bytes}")
        for name in ("flush_messages", "segment_ms"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")
        for name in ("flush_interval_ms", "retention_ms", "retention_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value}")
        if not (self.compacts or self.deletes):
            raise ValueError(f"cleanup_policy must name delete and/or compact, got {self.cleanup_policy!r}")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError(f"min_cleanable_dirty_ratio must be in [0, 1], got {self.min_cleanable_dirty_ratio}")
        if self.min_compaction_lag_ms < 0 or self.max_compaction_lag_ms <= 0 or self.delete_retention_ms < 0:
            raise ValueError("min_compaction_lag_ms and delete_retention_ms must be >= 0, max_compaction_lag_ms > 0")

    def with_topic_overrides(self, configs: Mapping[str, str]) -> LogConfig:
        """These settings with a topic's overrides laid over them (keys the log does not read, such as
        min.insync.replicas, are skipped). InvalidConfigError for a key or value TopicConfig refuses."""
        TopicConfig.from_map(configs)  # every key and value valid, or nothing applies
        changes = {}
        for key, text in configs.items():
            if key in TOPIC_KEYS:
                field_name, from_topic = TOPIC_KEYS[key]
                changes[field_name] = from_topic(parse_value(key, text))
        return dataclasses.replace(self, **changes) if changes else self

    def as_topic_configs(self) -> dict[str, str]:
        """These settings under the topic keys they are the defaults of (-1: no limit)."""
        result = {}
        for key, (field_name, _) in TOPIC_KEYS.items():
            value = getattr(self, field_name)
            if value is not None or key.startswith("retention."):
                result[key] = str(-1 if value is None else value)
        return result


def _unlimited_below_zero(value: int) -> int | None:
    return None if value < 0 else value


def _same(value):
    return value


# topic config key -> (LogConfig field, conversion of the TopicConfig value)
TOPIC_KEYS = {
    "retention.ms": ("retention_ms", _unlimited_below_zero),
    "retention.bytes": ("retention_bytes", _unlimited_below_zero),
    "segment.bytes": ("segment_bytes", _same),
    "segment.ms": ("segment_ms", _same),
    "max.message.bytes": ("max_batch_bytes", _same),
    "flush.messages": ("flush_messages", _same),
    "flush.ms": ("flush_interval_ms", _same),
    "cleanup.policy": ("cleanup_policy", _same),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _same),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _same),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _same),
    "delete.retention.ms": ("delete_retention_ms", _same),
}
