"""The follower's steps on one hosted partition: where to fetch, append, truncate.

Theory of operation (docs/architecture.md, "Partition steps", "Truncation by leader epoch"; KIP-101/320):

A fetcher thread asks `fetch_position` for every partition it carries, sends
one ReplicaFetch, and hands each partition's answer to `append_from_leader`,
`truncate_diverging` or `reset_out_of_range`. Each runs as one step under the
partition's lock (`HostedPartition.run`): a replica no longer hosted (its log
deleted or closed) drops the answer; anything else, in order, is the core's
(core/follower_steps.py): whether the answer is still wanted, the append or the
truncation, the producer table, the follower HW and log start. Storage errors
the log raises go through to the fetcher, which maps them (replication/).
No request waits on a follower's partition, so these steps report no effects.
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core import follower_steps
from replog.broker.core.effects import NO_EFFECTS
from replog.broker.core.errors import Refusal
from replog.broker.core.follower import fetch_position as core_fetch_position
from replog.broker.core.follower_steps import Appended, Truncated, follows
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.logdirs.log_dir_failures import LogDirFailures
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.common.core.partitions import TopicPartition


class FetchPosition(NamedTuple):
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    high_watermark: int


def _follows(hosted: HostedPartition, leader_epoch: int) -> bool:
    return hosted.usable and follows(hosted, leader_epoch)


def fetch_position(hosted: HostedPartition, *, leader_epoch: int) -> FetchPosition | None:
    """Where the next fetch starts; None when the replica no longer follows in `leader_epoch`."""
    return hosted.run(_fetch_position, leader_epoch)


def _fetch_position(hosted: HostedPartition, leader_epoch: int):
    if not _follows(hosted, leader_epoch):
        return None, NO_EFFECTS
    position = core_fetch_position(hosted.log)
    return FetchPosition(position.fetch_offset, position.last_fetched_epoch, hosted.log.log_start_offset,
                         hosted.replica.high_watermark), NO_EFFECTS


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
    if not hosted.usable:
        return None, NO_EFFECTS
    return follower_steps.append_from_leader(
        hosted, leader_epoch=leader_epoch, fetch_offset=fetch_offset, records=records,
        leader_high_watermark=leader_high_watermark, leader_log_start_offset=leader_log_start_offset, fsync=fsync)


def follower_append_failed(dir_failures: LogDirFailures, topic_partition: TopicPartition, exc: OSError) -> None:
    """The log refused the leader's records with `exc` (a failed write or fsync): nothing is retried, the
    directory goes offline unless the process only ran out of descriptors (logdirs/log_dir_failures.py),
    and the broker halts when it was its last one (control/offline_dirs.py). The fetcher backs the
    partition off meanwhile; the replication simulation's disks go through this too."""
    dir_failures.failed(f"an append of the leader's records to {topic_partition}", exc)


def truncate_diverging(
    hosted: HostedPartition, *, leader_epoch: int, fetch_offset: int, last_fetched_epoch: int, diverging: EpochEndOffset
) -> Truncated | Refusal | None:
    """The leader said our log diverged: cut it at the last common epoch (core/fetch/truncation.py)."""
    return hosted.run(_truncate_diverging, leader_epoch, fetch_offset, last_fetched_epoch, diverging)


def _truncate_diverging(hosted: HostedPartition, leader_epoch: int, fetch_offset: int, last_fetched_epoch: int,
                        diverging: EpochEndOffset):
    if not hosted.usable:
        return None, NO_EFFECTS
    return follower_steps.truncate_diverging(hosted, leader_epoch=leader_epoch, fetch_offset=fetch_offset,
                                             last_fetched_epoch=last_fetched_epoch, diverging=diverging)


def reset_out_of_range(
    hosted: HostedPartition, *, leader_epoch: int, fetch_offset: int, leader_log_start_offset: int,
    leader_log_end_offset: int,
) -> Truncated | None:
    """Our fetch offset is outside the leader's log: start at its log start, or cut back to its end."""
    return hosted.run(_reset_out_of_range, leader_epoch, fetch_offset, leader_log_start_offset, leader_log_end_offset)


def _reset_out_of_range(hosted: HostedPartition, leader_epoch: int, fetch_offset: int, leader_log_start_offset: int,
                        leader_log_end_offset: int):
    if not hosted.usable:
        return None, NO_EFFECTS
    return follower_steps.reset_out_of_range(hosted, leader_epoch=leader_epoch, fetch_offset=fetch_offset,
                                             leader_log_start_offset=leader_log_start_offset,
                                             leader_log_end_offset=leader_log_end_offset)


def truncate_corrupt_segment(hosted: HostedPartition, base_offset: int) -> Truncated | None:
    """The scrubber found a damaged segment starting at `base_offset`: a follower cuts its log there, and
    its fetcher takes the records again from the leader. None when the replica does not follow (a leader
    keeps its log: reads never serve the damage, log/segment_scan.checked_prefix)."""
    return hosted.run(_truncate_corrupt_segment, base_offset)


def _truncate_corrupt_segment(hosted: HostedPartition, base_offset: int):
    if not hosted.usable:
        return None, NO_EFFECTS
    return follower_steps.truncate_follower_to(hosted, base_offset)
