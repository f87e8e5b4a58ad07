"""The leader's partition steps, in their one order: a producer's append, and the answer to a follower's fetch.

Theory of operation (docs/architecture.md, "Partition steps", "An acks=all produce"; KIP-98, KIP-320):

Each step is a function of the partition (step_log.py) and the request that
returns the answer and ONE `Effects` value (effects.py), the facts its caller
acts on once the partition's lock is released. The broker
(replicas/leader_side.py) and the broker simulation (tests/scenario/broker) call
these same functions, so the order below is written once.

- `append_as_leader`: admit (acks, leadership, min.insync.replicas) ->
  idempotence check (a retried batch is answered with its original offsets and
  appends nothing) -> append -> record the producer's batch -> the leader's HW
  (it moves at once when the ISR is only this replica). Nothing touches the log
  unless every check passed. A storage error raised by the append leaves the
  producer table and the HW untouched; the caller maps it.
- `answer_follower_fetch`: the leader records the follower's position
  (leader.py: HW, ISR expansion) -> a refusal, a diverging epoch (no records),
  or the committed-or-not records from its position up to what it may send. A
  read that fails (a damaged batch) raises and the caller answers an error
  with no effects, as if the fetch had not been made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from replog.broker.core.effects import NO_EFFECTS, Effects
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fetch.follower_fetch import DivergingEpoch
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate
from replog.broker.core.isr.isr_proposal import AlterPartitionProposal
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.produce.producer_state import Duplicate
from replog.broker.core.replica import PartitionReplica
from replog.broker.core.step_log import ProducedHeader, StepLog, StepPartition


@dataclass(frozen=True)
class LeaderAppend:
    error_code: ErrorCode
    message: str = ""
    base_offset: int = -1
    last_offset: int = -1
    leader_epoch: int = -1
    log_start_offset: int = -1
    duplicate: bool = False
    high_watermark_update: HighWatermarkUpdate | None = None


def append_as_leader(
    partition: StepPartition, *, acks: int, min_insync_replicas: int, batch: Any, header: ProducedHeader, fsync: bool,
    now_ms: int,
) -> tuple[LeaderAppend, Effects]:
    """Append one validated producer batch, or answer a retried one with its original offsets."""
    replica = partition.replica
    admitted = replica.admit_produce(acks=acks, min_insync_replicas=min_insync_replicas)
    if isinstance(admitted, Refusal):
        return LeaderAppend(admitted.code, admitted.reason), NO_EFFECTS
    verdict = partition.producer_state.check(
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        record_count=header.record_count,
    )
    log = partition.log
    leader_epoch = replica.state.leader_epoch
    if isinstance(verdict, Refusal):
        return LeaderAppend(verdict.code, verdict.reason), NO_EFFECTS
    if isinstance(verdict, Duplicate):
        return LeaderAppend(
            ErrorCode.NONE, "", verdict.base_offset, verdict.last_offset, leader_epoch, log.log_start_offset,
            duplicate=True,
        ), NO_EFFECTS
    info = log.append_as_leader(batch, leader_epoch, fsync=fsync, validated=header)
    stored = partition.producer_batches.stored(header, info.base_offset)
    if stored is not None:
        partition.producer_state.record(stored)
    appended = replica.on_leader_append(log=log, appended_from=info.base_offset, now_ms=now_ms)
    return LeaderAppend(
        ErrorCode.NONE, "", info.base_offset, info.last_offset, leader_epoch, log.log_start_offset,
        high_watermark_update=appended.high_watermark_update,
    ), appended.effects


class FollowerFetchAnswer(NamedTuple):
    error_code: ErrorCode
    message: str
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    leader_epoch: int
    diverging: EpochEndOffset | None = None
    records: Any = b""  # what the leader's log read returned: bytes from PartitionLog
    high_watermark_update: HighWatermarkUpdate | None = None
    isr_proposal: AlterPartitionProposal | None = None
    follower_in_isr: bool = True  # False: the leader should look at this follower again even if it idles


def answer_follower_fetch(
    replica: PartitionReplica, log: StepLog, *, replica_id: int, current_leader_epoch: int, fetch_offset: int,
    last_fetched_epoch: int, replica_broker_epoch: int, bytes_max: int, now_ms: int,
) -> tuple[FollowerFetchAnswer, Effects]:
    """One partition of a follower's fetch: record its position, answer what follows it."""
    result = replica.on_follower_fetch(
        replica_id=replica_id,
        current_leader_epoch=current_leader_epoch,
        fetch_offset=fetch_offset,
        last_fetched_epoch=last_fetched_epoch,
        replica_broker_epoch=replica_broker_epoch,
        now_ms=now_ms,
        log=log,
    )
    if isinstance(result, Refusal):
        return FollowerFetchAnswer(
            result.code, result.reason, replica.high_watermark, log.log_start_offset, log.log_end_offset,
            replica.state.leader_epoch,
        ), NO_EFFECTS
    if isinstance(result, DivergingEpoch):
        return FollowerFetchAnswer(
            ErrorCode.NONE, "", result.high_watermark, result.log_start_offset, log.log_end_offset,
            result.leader_epoch, diverging=result.diverging,
        ), NO_EFFECTS
    records = b""
    if result.fetch_offset < result.read_upto_offset:
        records = log.read(result.fetch_offset, bytes_max, upper_offset=result.read_upto_offset)
    leader = replica.leader
    assert leader is not None, "only a leader serves a follower's records"
    return FollowerFetchAnswer(
        ErrorCode.NONE, "", result.high_watermark, result.log_start_offset, log.log_end_offset,
        result.leader_epoch, records=records, high_watermark_update=result.high_watermark_update,
        isr_proposal=result.isr_proposal, follower_in_isr=replica_id in leader.isr,
    ), result.effects
