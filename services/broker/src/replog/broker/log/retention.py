"""Which old segments retention deletes (pure; Kafka's retention.ms / retention.bytes).

Segments are deleted oldest first, as a prefix, and never the active (last)
one. By time, a segment goes when its newest record is more than
`retention_ms` old. By size, the oldest go while the log without them would
still hold at least `retention_bytes`. A segment also goes only when all of
its offsets are below `upper_offset` (the high watermark), so retention
never removes data a follower or consumer has not been able to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SegmentSummary:
    next_offset: int
    size_bytes: int
    max_timestamp_ms: int


def count_deletable_segments(
    segments: Sequence[SegmentSummary],
    *,
    now_ms: int,
    retention_ms: int | None,
    retention_bytes: int | None,
    upper_offset: int | None = None,
) -> int:
    """How many of the oldest `segments` to delete."""
    candidates = list(segments[:-1])
    if upper_offset is not None:
        allowed = 0
        while allowed < len(candidates) and candidates[allowed].next_offset <= upper_offset:
            allowed += 1
        candidates = candidates[:allowed]
    by_time = 0
    if retention_ms is not None:
        while by_time < len(candidates) and now_ms - candidates[by_time].max_timestamp_ms > retention_ms:
            by_time += 1
    by_size = 0
    if retention_bytes is not None:
        remaining_bytes = sum(segment.size_bytes for segment in segments)
        while (
            by_size < len(candidates)
            and remaining_bytes - candidates[by_size].size_bytes >= retention_bytes
        ):
            remaining_bytes -= candidates[by_size].size_bytes
            by_size += 1
    return max(by_time, by_size)
