"""Steps that change a hosted replica's log outside the data path: retention, DeleteRecords, new settings.

Theory of operation (docs/architecture.md, "Storage"): each is one step under
the partition's lock (`HostedPartition.run`). Retention runs on leaders and
followers alike, each deleting only whole segments below its own high
watermark (log/retention.py), from the checkpointer's rounds
(retention_rounds.py). DeleteRecords runs on the leader (core/delete_records.py);
the followers take the new start from their fetch answers (replicas/follower_side.py).
A step that moved the log start wakes the partition's long polls, so the
followers' fetch sessions read it and pass the start on even when no record
arrives. A topic's new settings reach a running log here (`update_log_config`).

The broker's logs only rename a deleted segment's files aside under the lock
(LogConfig.remove_deleted_at_once False): the unlinks and the directory fsync,
which a busy disk can make slow, run after the lock is released, by the thread
that deleted (retention rounds, a DeleteRecords handler). A follower that took
its leader's start leaves its files to the next retention round, off the
fetcher thread.
"""

from __future__ import annotations

from replog.broker.core.delete_records import delete_records_offset
from replog.broker.core.effects import LOG_START_MOVED, NO_EFFECTS
from replog.broker.core.errors import Refusal
from replog.broker.core.partition import ReplicaRole
from replog.broker.log import LogConfig
from replog.broker.log.segments import remove_set_aside
from replog.broker.replicas.hosted_partition import HostedPartition


def apply_retention(hosted: HostedPartition, now_ms: int) -> int:
    """Delete the segments retention lets go (`now_ms`: wall-clock), and the files of any segment
    deleted since; returns how many segments retention deleted."""
    config = hosted.log.config
    retained = config.deletes and (config.retention_ms is not None or config.retention_bytes is not None)
    if not retained and not hosted.log.has_set_aside_files:
        return 0  # read without the lock: a change in between waits one round
    count, set_aside = hosted.run(_apply_retention, now_ms)
    remove_set_aside(hosted.log.directory, set_aside)
    return count


def _apply_retention(hosted: HostedPartition, now_ms: int):
    if not hosted.usable:
        return (0, []), NO_EFFECTS
    deleted = hosted.log.delete_old_segments(now_ms, upper_offset=hosted.replica.high_watermark)
    return (len(deleted), hosted.log.take_set_aside_files()), (LOG_START_MOVED if deleted else NO_EFFECTS)


def delete_records(hosted: HostedPartition, requested_offset: int) -> int | Refusal:
    """Move the leader's log start to `requested_offset` (-1: the HW); returns the log start after."""
    answer = hosted.run(_delete_records, requested_offset)
    if isinstance(answer, Refusal):
        return answer
    start, set_aside = answer
    remove_set_aside(hosted.log.directory, set_aside)
    return start


def _delete_records(hosted: HostedPartition, requested_offset: int):
    state = hosted.replica.state
    offset = delete_records_offset(is_leader=hosted.usable and state.role is ReplicaRole.LEADER,
                                   requested_offset=requested_offset,
                                   high_watermark=hosted.replica.high_watermark)
    if isinstance(offset, Refusal):
        return offset, NO_EFFECTS
    moved = hosted.log.advance_log_start_offset(offset)
    answer = (hosted.log.log_start_offset, hosted.log.take_set_aside_files())
    return answer, (LOG_START_MOVED if moved else NO_EFFECTS)


def update_log_config(hosted: HostedPartition, config: LogConfig) -> None:
    """The topic's settings changed: the running log uses them from its next append or round."""
    hosted.run(_update_log_config, config)


def _update_log_config(hosted: HostedPartition, config: LogConfig):
    if hosted.usable and hosted.log.config != config:
        hosted.log.update_config(config)
    return None, NO_EFFECTS
