"""What DescribeReplicas reports of one hosted replica: its offsets, size, ISR and, as leader, each
follower's lag, read in one step under the partition's lock."""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.replicas.hosted_partition import HostedPartition


class FollowerLag(NamedTuple):
    broker_id: int
    log_end_offset: int
    bytes_behind: int
    caught_up_ms_ago: int  # -1: never caught up in this leader epoch


class ReplicaDescription(NamedTuple):
    topic: str
    partition: int
    leader: bool
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    isr: tuple[int, ...]
    followers: tuple[FollowerLag, ...]


def describe(hosted: HostedPartition, now_ms: int) -> ReplicaDescription | None:
    """None once the replica is deleted or closed."""
    return hosted.run(_describe, now_ms)


def _describe(hosted: HostedPartition, now_ms: int):
    if not hosted.usable:
        return None, NO_EFFECTS
    replica, partition_log = hosted.replica, hosted.log
    state, leader = replica.state, replica.leader
    log_start, log_end, size = partition_log.log_start_offset, partition_log.log_end_offset, partition_log.size_bytes
    followers = []
    if leader is not None:
        bytes_per_offset = size / max(log_end - log_start, 1)
        for replica_id in leader.replicas:
            if replica_id == hosted.broker_id:
                continue
            progress = leader.follower_progress(replica_id)
            behind = max(log_end - progress.log_end_offset, 0) if progress.log_end_offset >= 0 else log_end - log_start
            caught_up = progress.last_caught_up_ms
            followers.append(FollowerLag(replica_id, progress.log_end_offset, int(behind * bytes_per_offset),
                                         -1 if caught_up is None else max(now_ms - caught_up, 0)))
    tp = hosted.topic_partition
    return ReplicaDescription(tp.topic, tp.partition, leader is not None, state.leader_epoch, log_start, log_end,
                              replica.high_watermark, size, state.isr, tuple(followers)), NO_EFFECTS
