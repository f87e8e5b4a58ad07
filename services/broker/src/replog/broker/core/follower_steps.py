"""The follower's partition steps, in their one order: append the leader's batches, truncate.

Theory of operation (docs/architecture.md, "Partition steps", "Truncation by leader epoch"; KIP-101, KIP-320):

Each step is a function of the partition (step_log.py) and the leader's answer,
and returns its own answer and ONE `Effects` value (effects.py). No request
waits on a follower's partition, so every step here returns `NO_EFFECTS`. The
broker (replicas/follower_side.py) and the broker simulation
(tests/scenario/broker) call these same functions.

Every step first checks that the leader's answer is still wanted: the replica
still follows in the leader epoch the fetch was made for, and its log still
ends where the fetch started (for a truncation, also in the epoch the fetch
named: a log cut and grown back to the same offset is another log). An answer
that raced with a LeaderAndIsr or another step is dropped (None); the next
fetch asks again.

- `append_from_leader`: append the batches -> record their producers -> the
  follower HW (follower.py: min of the leader's HW and the own LEO, never
  back) -> the log start follows the leader's (retention, DeleteRecords there),
  up to the own LEO. A write that fails midway (EMFILE at a roll) raises; the
  producer table first takes the batches that reached the log.
- `truncate_diverging`: the leader named a diverging epoch; cut at the last
  common epoch (core/fetch/truncation.py).
- `reset_out_of_range`: the fetch offset is outside the leader's log: below its
  start, start over there; past its end, cut back to it.
- `truncate_follower_to`: cut at a given offset (a damaged segment).

After any truncation the producer table is rebuilt from the log (truncated
batches must be forgotten) and the HW is clamped to the new log end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from replog.broker.core.effects import NO_EFFECTS, Effects
from replog.broker.core.errors import Refusal
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.partition import ReplicaRole
from replog.broker.core.step_log import StepPartition
from replog.broker.core.fetch.truncation import AskLeaderForEpoch, on_diverging_epoch


class Appended(NamedTuple):
    byte_count: int  # len() of the batches taken: bytes for PartitionLog
    log_start_moved: bool  # the follower took its leader's newer log start


@dataclass(frozen=True)
class Truncated:
    log_end_offset_before: int
    log_end_offset_after: int
    high_watermark: int


def follows(partition: StepPartition, leader_epoch: int) -> bool:
    """The replica follows in `leader_epoch`: an answer to a fetch made for it is still wanted."""
    state = partition.replica.state
    return state.role is ReplicaRole.FOLLOWER and state.leader_epoch == leader_epoch


def append_from_leader(
    partition: StepPartition, *, leader_epoch: int, fetch_offset: int, records: Any, leader_high_watermark: int,
    leader_log_start_offset: int = -1, fsync: bool = False,
) -> tuple[Appended | None, Effects]:
    """Append the leader's batches, move the follower HW and log start; None if stale."""
    log = partition.log
    if not follows(partition, leader_epoch) or log.log_end_offset != fetch_offset:
        return None, NO_EFFECTS
    if records:
        try:
            appended = log.append_as_follower(records, fsync=fsync)
        except OSError:  # the disk refused a write or the fsync; the caller maps it
            log_end_offset = log.log_end_offset
            if log_end_offset > fetch_offset:  # some batches reached the log: the table keeps up with those
                partition.producer_state.replay(
                    partition.producer_batches.written_below(records, fetch_offset, log_end_offset))
            raise
        if appended is not None:
            partition.producer_state.replay(partition.producer_batches.replicated(appended))
    partition.replica.on_fetch_response(leader_high_watermark=leader_high_watermark, log=log)
    moved = (leader_log_start_offset > log.log_start_offset
             and log.advance_log_start_offset(min(leader_log_start_offset, log.log_end_offset)))
    return Appended(len(records), moved), NO_EFFECTS


def truncate_diverging(
    partition: StepPartition, *, leader_epoch: int, fetch_offset: int, last_fetched_epoch: int,
    diverging: EpochEndOffset,
) -> tuple[Truncated | Refusal | None, Effects]:
    """The leader said our log diverged: cut it at the last common epoch.

    The answer judged the log the fetch described, ending at `fetch_offset` in `last_fetched_epoch`: one
    cut since and grown back to the same offset in a newer epoch ends there too, but not in that epoch,
    and the answer is stale (records it would cut may be committed)."""
    log = partition.log
    if (not follows(partition, leader_epoch) or log.log_end_offset != fetch_offset
            or log.latest_epoch() != last_fetched_epoch):
        return None, NO_EFFECTS
    decision = on_diverging_epoch(log, last_fetched_epoch=last_fetched_epoch, diverging=diverging)
    if isinstance(decision, Refusal):
        return decision, NO_EFFECTS
    offset = decision.truncate_to_offset if isinstance(decision, AskLeaderForEpoch) else decision.offset
    return _truncate(partition, offset), NO_EFFECTS


def reset_out_of_range(
    partition: StepPartition, *, leader_epoch: int, fetch_offset: int, leader_log_start_offset: int,
    leader_log_end_offset: int,
) -> tuple[Truncated | None, Effects]:
    """Our fetch offset is outside the leader's log: start at its log start, or cut back to its end."""
    log = partition.log
    if not follows(partition, leader_epoch) or log.log_end_offset != fetch_offset:
        return None, NO_EFFECTS
    before = log.log_end_offset
    if fetch_offset < leader_log_start_offset:
        log.truncate_fully_and_start_at(leader_log_start_offset)
        partition.replica.on_truncated(log=log)
        partition.producer_state = partition.producer_batches.rebuild(log, partition.producer_state.limits)
        return Truncated(before, log.log_end_offset, partition.replica.high_watermark), NO_EFFECTS
    if fetch_offset > leader_log_end_offset >= 0:
        return _truncate(partition, leader_log_end_offset), NO_EFFECTS
    return None, NO_EFFECTS


def truncate_follower_to(partition: StepPartition, offset: int) -> tuple[Truncated | None, Effects]:
    """Cut a follower's log at `offset`; None when the replica does not follow (a leader never truncates)."""
    if partition.replica.state.role is not ReplicaRole.FOLLOWER:
        return None, NO_EFFECTS
    return _truncate(partition, offset), NO_EFFECTS


def _truncate(partition: StepPartition, offset: int) -> Truncated:
    log = partition.log
    before = log.log_end_offset
    # Also at the LEO: a log that notes a leader epoch before its first record (Kafka's, the simulation's)
    # forgets one that starts there; PartitionLog notes it with the record, so there it does nothing.
    log.truncate_to(offset)
    if offset < before:
        partition.producer_state = partition.producer_batches.rebuild(log, partition.producer_state.limits)
    high_watermark = partition.replica.on_truncated(log=log)
    return Truncated(before, log.log_end_offset, high_watermark)
