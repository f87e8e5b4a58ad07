"""What a follower does with one partition of its leader's fetch answer: append, truncate, reset or back off.

Theory of operation (docs/architecture.md, "Replication", "Truncation by leader epoch"; KIP-101/320):

The fetcher (fetcher.py) reads the answer off the wire into a `LeaderAnswer` and
hands it here with the position its request named. The step on the replica
(replicas/follower_side.py) first checks, under the partition's lock, that the
answer is still wanted (the replica follows in that leader epoch, its log ends
where the fetch started) and drops it otherwise. By the answer:

- records, or only a newer HW: append them and move the follower HW; in the durable
  mode (`fsync`) the records are fsynced before the step returns, so the position
  the next fetch reports to the leader, which counts toward the HW, is on disk;
- a diverging epoch: truncate to the last common epoch, inside a
  `broker.truncate` span joined to the trace of the LeaderAndIsr that made this
  broker follow;
- OFFSET_OUT_OF_RANGE: start empty at the leader's log start, or cut back to its
  log end;
- any other error: back off the partition, since the leader may not have taken
  the LeaderAndIsr yet; records that cannot be appended back it off longer.

The result says whether the next request must name the partition again: after
an append, a truncation or a back-off its position may have moved, while after
an answer carrying only a newer HW the position stays as the leader knows it.
"""

from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.log import CorruptRecordError, LogOffsetMismatchError
from replog.broker.replicas.follower_side import (
    FetchPosition,
    Truncated,
    append_from_leader,
    follower_append_failed,
    reset_out_of_range,
    truncate_diverging,
)
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common import telemetry
from replog.common.core.partitions import TopicPartition
from replog.common.errors import error_name

log = logging.getLogger(__name__)
tracer = trace.get_tracer("replog.broker")

PARTITION_BACKOFF_MS = 200
ERROR_BACKOFF_MS = 1000


class LeaderAnswer(NamedTuple):
    """One partition of a leader's ReplicaFetch answer."""

    error_code: int  # as sent; compared with ErrorCode's members as an int (docs/perf/hot-path-values.md)
    error_message: str
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    records: bytes
    diverging: EpochEndOffset | None


class Handled(NamedTuple):
    name_again: bool  # the next request names the partition (its position may have moved)
    back_off_ms: int = 0  # back the partition off this long first


_NAME_AGAIN = Handled(True)
_POSITION_KNOWN = Handled(False)


class Follow(NamedTuple):
    """Whom the answer's partition follows: in which leader epoch of which leader, and the trace of the
    LeaderAndIsr that made it follow."""

    topic_partition: TopicPartition
    leader_id: int
    leader_epoch: int
    trace_context: otel_context.Context | None


def handle_answer(hosted: HostedPartition, follow: Follow, position: FetchPosition, answer: LeaderAnswer,
                  metrics: BrokerMetrics, *, fsync: bool = False) -> Handled:
    code = answer.error_code
    tp, leader_epoch = follow.topic_partition, follow.leader_epoch
    if code == ErrorCode.NONE and answer.diverging is not None:
        diverging = answer.diverging
        return _truncate(follow, "diverging epoch", metrics, lambda: truncate_diverging(
            hosted, leader_epoch=leader_epoch, fetch_offset=position.fetch_offset,
            last_fetched_epoch=position.last_fetched_epoch, diverging=diverging))
    if code == ErrorCode.NONE and hosted.dir_failures.offline:  # nothing more is written there
        return Handled(True, ERROR_BACKOFF_MS)
    if code == ErrorCode.NONE:
        try:
            appended = append_from_leader(hosted, leader_epoch=leader_epoch, fetch_offset=position.fetch_offset,
                                          records=answer.records, leader_high_watermark=answer.high_watermark,
                                          leader_log_start_offset=answer.log_start_offset, fsync=fsync)
        except (CorruptRecordError, LogOffsetMismatchError) as exc:
            log.error("%s: cannot append the leader's records: %s", tp, exc)
            return Handled(True, ERROR_BACKOFF_MS)
        except OSError as exc:  # a failed write or fsync: the directory goes offline; EMFILE: tried again later
            follower_append_failed(hosted.dir_failures, tp, exc)
            return Handled(True, ERROR_BACKOFF_MS)
        if appended is None:
            return _NAME_AGAIN
        if appended.byte_count:
            metrics.replication_bytes_in.inc(appended.byte_count)
        # a new log start is named in the next fetch, so the leader's session knows it was taken
        return _NAME_AGAIN if appended.byte_count or appended.log_start_moved else _POSITION_KNOWN
    if code == ErrorCode.OFFSET_OUT_OF_RANGE:
        return _truncate(follow, "offset out of range", metrics, lambda: reset_out_of_range(
            hosted, leader_epoch=leader_epoch, fetch_offset=position.fetch_offset,
            leader_log_start_offset=answer.log_start_offset, leader_log_end_offset=answer.log_end_offset))
    log.debug("%s: leader %d answered %s: %s", tp, follow.leader_id, error_name(code), answer.error_message)
    return Handled(True, PARTITION_BACKOFF_MS)


def _truncate(follow: Follow, why: str, metrics: BrokerMetrics,
              step: Callable[[], Truncated | Refusal | None]) -> Handled:
    tp = follow.topic_partition
    attributes = {"topic": tp.topic, "partition": tp.partition, "leader.id": follow.leader_id,
                  "leader_epoch": follow.leader_epoch, "reason": why}
    with tracer.start_as_current_span("broker.truncate", context=follow.trace_context,
                                      attributes=attributes) as span:
        result = step()
        if isinstance(result, Refusal):
            telemetry.mark_failed(span, result.code.name, result.reason)
            log.error("%s: truncation refused: %s", tp, result.reason)
            return Handled(True, ERROR_BACKOFF_MS)
        if result is None:
            span.set_attribute("stale", True)
            return _NAME_AGAIN
        span.set_attribute("log_end_offset.before", result.log_end_offset_before)
        span.set_attribute("log_end_offset.after", result.log_end_offset_after)
        span.set_attribute("high_watermark", result.high_watermark)
    if result.log_end_offset_after < result.log_end_offset_before:
        metrics.truncations.inc()
        log.info("%s: truncated from %d to %d (%s, leader %d epoch %d)", tp, result.log_end_offset_before,
                 result.log_end_offset_after, why, follow.leader_id, follow.leader_epoch)
    return _NAME_AGAIN
