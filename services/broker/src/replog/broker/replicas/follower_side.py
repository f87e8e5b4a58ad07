"""The follower's steps on one hosted partition: where to fetch, append, truncate.

Theory of operation (docs/architecture.md, "Truncation by leader epoch", "High watermark and ISR"; KIP-101/320):

A fetcher thread asks `fetch_position` for every partition it carries, sends
one ReplicaFetch, and hands each partition's answer to `append_from_leader`,
`truncate_diverging` or `reset_out_of_range`. Each runs as one step under the
partition's lock (`HostedPartition.run`) and first checks that the answer is
still wanted: the replica still follows in the leader epoch the fetch was made
for, and its log still ends where the fetch started. An answer that raced with
a LeaderAndIsr or another step is dropped; the next fetch asks again. After any
truncation the producer table is rebuilt from the log (truncated batches must be
forgotten) and the HW is clamped to the new log end by the core. The follower's
log start follows the leader's (retention, DeleteRecords there): every answer
carries it, and the follower moves its own up to it, or to its LEO if that is
lower (a fetch below the leader's start is answered OFFSET_OUT_OF_RANGE and
`reset_out_of_range` starts the log over at the leader's start). No request
waits on a follower's partition, so these steps report no effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.core.errors import Refusal
from replog.broker.core.follower import fetch_position as core_fetch_position
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.partition import ReplicaRole
from replog.broker.core.truncation import AskLeaderForEpoch, on_diverging_epoch
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.producer_headers import rebuild_from_log, record_batches
from replog.common.records import iter_batches


class FetchPosition(NamedTuple):
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    high_watermark: int


@dataclass(frozen=True)
class Truncated:
    log_end_offset_before: int
    log_end_offset_after: int
    high_watermark: int


def _follows(hosted: HostedPartition, leader_epoch: int) -> bool:
    state = hosted.replica.state
    return hosted.usable and state.role is ReplicaRole.FOLLOWER and state.leader_epoch == leader_epoch


def fetch_position(hosted: HostedPartition, *, leader_epoch: int) -> FetchPosition | None:
    """Where the next fetch starts; None when the replica no longer follows in `leader_epoch`."""
    return hosted.run(_fetch_position, leader_epoch)


def _fetch_position(hosted: HostedPartition, leader_epoch: int):
    if not _follows(hosted, leader_epoch):
        return None, NO_EFFECTS
    position = core_fetch_position(hosted.log)
    return FetchPosition(position.fetch_offset, position.last_fetched_epoch, hosted.log.log_start_offset,
                         hosted.replica.high_watermark), NO_EFFECTS


class Appended(NamedTuple):
    byte_count: int
    log_start_moved: bool  # the follower took its leader's newer log start


def append_from_leader(
    hosted: HostedPartition, *, leader_epoch: int, fetch_offset: int, records: bytes, leader_high_watermark: int,
    leader_log_start_offset: int = -1, fsync: bool = False,
) -> Appended | None:
    """Append the leader's batches, move the follower HW and log start; None if stale.

    `fsync`: the durable mode; the batches are on disk before this returns, so the fetch
    position the next request reports (and the leader counts toward the HW) is durable.
    Raises CorruptRecordError / LogOffsetMismatchError with nothing written, OSError when
    the disk refused the write or the fsync.
    """
    return hosted.run(_append_from_leader, leader_epoch, fetch_offset, records, leader_high_watermark,
                      leader_log_start_offset, fsync)


def _append_from_leader(hosted: HostedPartition, leader_epoch: int, fetch_offset: int, records: bytes,
                        leader_high_watermark: int, leader_log_start_offset: int, fsync: bool):
    if not _follows(hosted, leader_epoch) or hosted.log.log_end_offset != fetch_offset:
        return None, NO_EFFECTS
    if records:
        try:
            appended = hosted.log.append_as_follower(records, fsync=fsync)
        except OSError:  # e.g. EMFILE at a roll after some batches were written: the table keeps up with those
            log_end_offset = hosted.log.log_end_offset
            record_batches(hosted.producer_state, (header for _, header in iter_batches(records)
                                                   if fetch_offset <= header.base_offset < log_end_offset))
            raise
        if appended is not None:
            record_batches(hosted.producer_state, appended.headers)
    hosted.replica.on_fetch_response(leader_high_watermark=leader_high_watermark, log=hosted.log)
    moved = (leader_log_start_offset > hosted.log.log_start_offset
             and hosted.log.advance_log_start_offset(min(leader_log_start_offset, hosted.log.log_end_offset)))
    return Appended(len(records), moved), NO_EFFECTS


def truncate_diverging(
    hosted: HostedPartition, *, leader_epoch: int, fetch_offset: int, last_fetched_epoch: int, diverging: EpochEndOffset
) -> Truncated | Refusal | None:
    """The leader said our log diverged: cut it at the last common epoch (truncation.py)."""
    return hosted.run(_truncate_diverging, leader_epoch, fetch_offset, last_fetched_epoch, diverging)


def _truncate_diverging(hosted: HostedPartition, leader_epoch: int, fetch_offset: int, last_fetched_epoch: int,
                        diverging: EpochEndOffset):
    if not _follows(hosted, leader_epoch) or hosted.log.log_end_offset != fetch_offset:
        return None, NO_EFFECTS
    decision = on_diverging_epoch(hosted.log, last_fetched_epoch=last_fetched_epoch, diverging=diverging)
    if isinstance(decision, Refusal):
        return decision, NO_EFFECTS
    offset = decision.truncate_to_offset if isinstance(decision, AskLeaderForEpoch) else decision.offset
    return _truncate_locked(hosted, offset), NO_EFFECTS


def reset_out_of_range(
    hosted: HostedPartition, *, leader_epoch: int, fetch_offset: int, leader_log_start_offset: int,
    leader_log_end_offset: int,
) -> Truncated | None:
    """Our fetch offset is outside the leader's log: start at its log start, or cut back to its end."""
    return hosted.run(_reset_out_of_range, leader_epoch, fetch_offset, leader_log_start_offset, leader_log_end_offset)


def _reset_out_of_range(hosted: HostedPartition, leader_epoch: int, fetch_offset: int, leader_log_start_offset: int,
                        leader_log_end_offset: int):
    if not _follows(hosted, leader_epoch) or hosted.log.log_end_offset != fetch_offset:
        return None, NO_EFFECTS
    before = hosted.log.log_end_offset
    if fetch_offset < leader_log_start_offset:
        hosted.log.truncate_fully_and_start_at(leader_log_start_offset)
        hosted.replica.on_truncated(log=hosted.log)
        hosted.producer_state = rebuild_from_log(hosted.log, hosted.producer_state.limits)
        return Truncated(before, hosted.log.log_end_offset, hosted.replica.high_watermark), NO_EFFECTS
    if fetch_offset > leader_log_end_offset >= 0:
        return _truncate_locked(hosted, leader_log_end_offset), NO_EFFECTS
    return None, NO_EFFECTS


def _truncate_locked(hosted: HostedPartition, offset: int) -> Truncated:
    before = hosted.log.log_end_offset
    if offset < before:
        hosted.log.truncate_to(offset)
        hosted.producer_state = rebuild_from_log(hosted.log, hosted.producer_state.limits)
    high_watermark = hosted.replica.on_truncated(log=hosted.log)
    return Truncated(before, hosted.log.log_end_offset, high_watermark)


def truncate_corrupt_segment(hosted: HostedPartition, base_offset: int) -> Truncated | None:
    """The scrubber found a damaged segment starting at `base_offset`: a follower cuts its log there, and
    its fetcher takes the records again from the leader. None when the replica does not follow (a leader
    keeps its log: reads never serve the damage, log/segment_scan.checked_prefix)."""
    return hosted.run(_truncate_corrupt_segment, base_offset)


def _truncate_corrupt_segment(hosted: HostedPartition, base_offset: int):
    if not hosted.usable or hosted.replica.state.role is not ReplicaRole.FOLLOWER:
        return None, NO_EFFECTS
    return _truncate_locked(hosted, base_offset), NO_EFFECTS
