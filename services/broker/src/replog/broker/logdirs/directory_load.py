"""What one log directory holds at start: its partition logs, opened and recovered (issue 40).

Theory of operation
-------------------
`scan` takes the directory's clean-shutdown marker and lists its partition directories (and those set
aside for removal before the last stop); `open_logs` reads its HW, recovery-point and log-start
checkpoints, then opens and recovers each log, running its recovery from the checkpointed recovery point
(a torn or corrupt tail is cut and reported), and rebuilds its producer table.

A storage error at start is final for the directory, as one at run time is (log_dir_failures.py): an
OSError while listing the directory or opening a log, or an HW or log-start checkpoint that cannot be
read (a wrong CRC-32C, say: guessing a high watermark could expose or hide committed records), takes
THAT directory offline, with a reason naming the file and the error. Nothing of it is hosted then: the
logs already opened are dropped without a flush and `open_logs` answers None; the partitions listed
before the failure stay that directory's offline replicas (replicas/replica_manager.py). An EMFILE / ENFILE is
no storage error (`is_out_of_descriptors`): it is raised, and start-up stops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from replog.broker.core.produce.producer_state import ProducerStateLimits, ProducerStateTable
from replog.broker.log import (
    CheckpointError,
    LogConfig,
    LostRecords,
    PartitionLog,
    lost_committed_records,
    take_clean_shutdown_marker,
)
from replog.broker.logdirs.log_dir_failures import is_out_of_descriptors
from replog.broker.logdirs.log_dirs import LogDirectory
from replog.broker.logdirs.partition_dirs import local_partition_directories, set_aside_directories
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DirectoryScan:
    clean: bool  # the last stop left the clean-shutdown marker (False when the listing failed)
    partitions: dict[TopicPartition, Path] = field(default_factory=dict)
    leftovers: tuple[Path, ...] = ()  # replicas' directories deleted before the last stop, not yet removed


class LoadedReplica(NamedTuple):
    topic_partition: TopicPartition
    log: PartitionLog
    high_watermark: int
    producer_state: ProducerStateTable


@dataclass(frozen=True)
class LoadedDirectory:
    replicas: list[LoadedReplica]
    lost_records: list[LostRecords]  # committed records recovery could not find
    bytes_dropped: int  # what recovery cut from the logs' tails


def scan(directory: LogDirectory) -> DirectoryScan:
    """The marker and the listing; an OSError takes the directory offline, with nothing listed."""
    try:
        directory.path.mkdir(parents=True, exist_ok=True)
        clean = take_clean_shutdown_marker(directory.path)
        return DirectoryScan(clean, local_partition_directories(directory.path),
                             tuple(set_aside_directories(directory.path)))
    except OSError as exc:
        if is_out_of_descriptors(exc):
            raise
        _went_offline(directory, f"listing {directory.path}", exc)
        return DirectoryScan(clean=False)


def open_logs(directory: LogDirectory, found: DirectoryScan, *, log_config_of: Callable[[str], LogConfig],
              clock: Clock, producer_state_limits: ProducerStateLimits) -> LoadedDirectory | None:
    """Every log of the directory, opened and recovered; None when the directory went offline instead."""
    replicas: list[LoadedReplica] = []
    opened: list[PartitionLog] = []
    lost: list[LostRecords] = []
    dropped = 0
    during = f"reading the checkpoints in {directory.path}"
    try:
        high_watermarks, recovery_points, log_starts = directory.read_checkpoints()
        for topic_partition, path in found.partitions.items():
            during = f"opening the log of {topic_partition} at {path}"
            key = (topic_partition.topic, topic_partition.partition)
            # No recovery point recorded: scan every segment (rolled ones may never have been fsynced).
            partition_log = PartitionLog.open(path, log_config_of(topic_partition.topic), clock,
                                              recovery_point=recovery_points.get(key, 0),
                                              log_start_offset=log_starts.get(key, 0))
            opened.append(partition_log)
            high_watermark = high_watermarks.get(key, 0)
            dropped += _report_recovery(topic_partition, partition_log, high_watermark, found.clean, lost)
            replicas.append(LoadedReplica(topic_partition, partition_log, high_watermark,
                                          rebuild_from_log(partition_log, producer_state_limits)))
    except (CheckpointError, OSError) as exc:
        for partition_log in opened:
            partition_log.release_descriptors()  # closed without a flush: the log is never used again
        if isinstance(exc, OSError) and is_out_of_descriptors(exc):
            raise  # nothing is wrong with the disk, but the broker cannot open its logs: start-up stops
        _went_offline(directory, during, exc)
        return None
    return LoadedDirectory(replicas, lost, dropped)


def _report_recovery(topic_partition: TopicPartition, partition_log: PartitionLog, high_watermark: int,
                     clean: bool, lost: list[LostRecords]) -> int:
    """Log what recovery cut and any committed records it could not find (noted in `lost`); the bytes cut."""
    report = partition_log.recovery_report
    if not report.clean:
        log.warning("%s: start-up recovery dropped %d bytes from %s (%s)", topic_partition,
                    report.bytes_dropped, report.segment, report.reason)
    missing = lost_committed_records(topic_partition.topic, topic_partition.partition, high_watermark,
                                     partition_log.log_end_offset)
    if missing is not None:
        lost.append(missing)
        log.error("%s: lost %d committed records: the high watermark was checkpointed at %d, the log "
                  "recovered after %s ends at %d", topic_partition, missing.count, high_watermark,
                  "a clean stop" if clean else "an unclean shutdown", partition_log.log_end_offset)
    return 0 if report.clean else report.bytes_dropped


def _went_offline(directory: LogDirectory, during: str, exc: OSError | CheckpointError) -> None:
    directory.failures.failed(f"{during} at start", exc)  # logged at critical, as at run time
