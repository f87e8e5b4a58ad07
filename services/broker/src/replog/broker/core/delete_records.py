"""DeleteRecords on a leader: to which offset its log start may move (Kafka's deleteRecords, KIP-107).

Theory of operation: an operator moves a partition's log start up to an offset,
making everything below it unreadable; the leader moves its own start at once
and its followers take it from the fetch answers (their log start follows the
leader's). Only committed records may go, so the offset is at most the high
watermark; -1 names the high watermark itself. An offset at or below the
current start changes nothing and is not an error (the call is idempotent).
"""

from __future__ import annotations

from replog.broker.core.errors import ErrorCode, Refusal

HIGH_WATERMARK = -1  # the offset that names the partition's high watermark


def delete_records_offset(*, is_leader: bool, requested_offset: int, high_watermark: int) -> int | Refusal:
    """The offset the log start moves to (never lowered by the caller), or why not."""
    if not is_leader:
        return Refusal(ErrorCode.NOT_LEADER, "this broker does not lead the partition")
    if requested_offset == HIGH_WATERMARK:
        return high_watermark
    if requested_offset < 0:
        return Refusal(ErrorCode.OFFSET_OUT_OF_RANGE,
                       f"offset {requested_offset} is negative; give an offset >= 0, or -1 for the high watermark")
    if requested_offset > high_watermark:
        return Refusal(ErrorCode.OFFSET_OUT_OF_RANGE,
                       f"offset {requested_offset} is above the high watermark {high_watermark}; "
                       "only committed records can be deleted")
    return requested_offset
