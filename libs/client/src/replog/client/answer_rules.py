"""What the producer does with a leader's answer to one batch: the sender's rule, as a pure function.

`decide_answer(code, ...)` -> `Verdict`; it reads no clock, holds no state and sends nothing, so the
sender (sender.py, `Sender._complete`) and the broker simulation (tests/scenario/broker/) run the
same rule on every answer. The caller does what the verdict says:

- DELIVERED: the batch is written (an idempotent retry of a batch the leader already has comes
  back as a duplicate, with the original offset): its records' handles get their offsets.
- RETRY: send the same bytes with the same sequence again, after a backoff, in the partition's
  order (accumulator.py). Retriable are the answers of a leader that moved, is not ready or could
  not replicate in time, and a lost answer (BROKER_NOT_AVAILABLE: the stream broke, or the sender
  gave it up), until the batch's delivery deadline.
- RETRY_AFTER_THROTTLE: the broker refused the batch unappended because it throttles this producer
  (client quotas): again once the throttle ends, before the deadline, with no backoff of its own.
- FAIL: the error reaches the caller.

A sequence refusal (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID) means the leader has not
appended a batch this one follows. With idempotence, an earlier batch of the partition that is not
yet answered for good explains it (it failed, or went to another leader): retry after it. With no
such batch the gap is real and the batch fails. Without idempotence a batch has no sequence, so a
leader has no reason to send either code: it fails.
"""

from __future__ import annotations

import enum

from replog.common.error_codes import ErrorCode


class Verdict(enum.Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    RETRY_AFTER_THROTTLE = "retry after throttle"
    FAIL = "fail"


RETRIABLE = frozenset({
    ErrorCode.NOT_LEADER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # may be metadata lag right after creation
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.BROKER_SHUTTING_DOWN,
    ErrorCode.STORAGE_ERROR,
    # A partition full of producers forgets the idle ones as soon as it refused a new one: room may come.
    ErrorCode.PRODUCER_STATE_FULL,
    # No answer: the stream broke or was given up (sender.py); the leader may or may not have the batch.
    ErrorCode.BROKER_NOT_AVAILABLE,
})
# How a leader refuses a batch whose predecessors it has not appended: out of order, or, when none of
# them reached it (the partition's first batch failed, e.g. while a new topic's leaders were starting),
# as a producer it does not know.
SEQUENCE_GAP = frozenset({ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID})
WRITTEN = frozenset({ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER})


def decide_answer(code: int, *, idempotent: bool, earlier_unfinished: bool, deadline_passed: bool) -> Verdict:
    """The verdict on one batch's answer `code` (a replog.v1 ErrorCode number).

    `earlier_unfinished`: an earlier batch of the same partition (in send order) is not yet answered
    for good; `deadline_passed`: the batch's delivery timeout has run out."""
    if code in WRITTEN:
        return Verdict.DELIVERED
    if deadline_passed:
        return Verdict.FAIL
    if code == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
        return Verdict.RETRY_AFTER_THROTTLE
    if code in RETRIABLE:
        return Verdict.RETRY
    if code in SEQUENCE_GAP and idempotent and earlier_unfinished:
        return Verdict.RETRY
    return Verdict.FAIL
