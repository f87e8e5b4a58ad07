"""The replicas this broker hosts: loading them at start-up, looking them up, checkpoints.

Theory of operation (docs/architecture.md, "Data flow", "Storage"):

`ReplicaManager` is the registry of `HostedPartition`s. Its own lock guards
only membership (which partitions exist); each partition has its own lock for
everything else. At start-up `load()` opens every partition directory under
the log dir, running each log's recovery from its checkpointed recovery point
(a torn or corrupt tail is cut and reported), loads the HW checkpoint and
rebuilds each replica's producer table from its log. It takes the clean-shutdown
marker first (log/clean_shutdown.py): without it the last stop was a crash or a
power loss, and a replica whose recovered log ends below its checkpointed HW has
lost committed records; those are listed in `lost_records` for the broker to
report (the HW is still clamped to the log end, now loudly). Partitions no longer
assigned here are deleted (`delete_unassigned`, seed v3 §E) before the broker
registers. `write_checkpoints()` atomically rewrites the HW file and the
recovery-point and log-start files (checkpoints.py: temp, fsync, rename, fsync
dir) for every hosted replica; the checkpointer calls it periodically and `close()` once
more after flushing every log, then writes the clean-shutdown marker.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.core.partition import ReplicaRole
from replog.broker.core.produce import ProduceProgress
from replog.broker.core.producer_state import ProducerStateLimits
from replog.broker.log import (
    HW_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    CheckpointError,
    LogConfig,
    LostRecords,
    PartitionLog,
    lost_committed_records,
    read_offsets_checkpoint,
    take_clean_shutdown_marker,
    write_clean_shutdown_marker,
    write_offsets_checkpoint,
)
from replog.broker.log.descriptors import DescriptorBudget
from replog.broker.replicas.consequences import Consequences
from replog.broker.replicas.directory_remover import DirectoryRemover
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import produce_progress
from replog.broker.replicas.log_dir_failures import LogDirFailures
from replog.broker.replicas.log_dir_space import LogDirSpace
from replog.broker.replicas.log_maintenance import update_log_config
from replog.broker.replicas.partition_dirs import (
    local_partition_directories,
    partition_directory,
    set_aside_directories,
)
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.broker.runtime.metrics import PartitionSummary
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)

_NOT_HOSTED = ProduceProgress(is_leader=False, leader_epoch=-1, high_watermark=-1, isr_size=0, leading_since_epoch=-1)


class ReplicaManager:
    def __init__(self, *, broker_id: int, log_dir: Path, log_config: LogConfig, clock: Clock,
                 producer_state_limits: ProducerStateLimits = ProducerStateLimits(),
                 log_config_of: Callable[[str], LogConfig] | None = None,
                 descriptor_budget: DescriptorBudget | None = None) -> None:
        self.broker_id = broker_id
        self.log_dir = Path(log_dir)
        self._log_config = log_config
        self._producer_state_limits = producer_state_limits
        # a topic's settings: the defaults with its overrides (topic_configs.py), once it is watched
        self.log_config_of: Callable[[str], LogConfig] = log_config_of or (lambda topic: log_config)
        self._clock = clock
        self._lock = threading.Lock()
        self._partitions: dict[TopicPartition, HostedPartition] = {}
        self._created_since_settle = 0
        self._per_topic: dict[str, int] = {}  # entries in _partitions per topic, so hosts_topic is O(1)
        self._checkpoint_lock = threading.RLock()  # held while offsets are read and written
        self._remover = DirectoryRemover()  # deleted replicas' directories, renamed aside, go here
        self._checkpointed: dict[tuple[str, int], tuple[int, int, int]] | None = None  # as last written
        self.clean_start = True  # the last stop left the clean-shutdown marker (set by `load`)
        self.lost_records: list[LostRecords] = []  # committed records recovery could not find (set by `load`)
        # What the steps on every hosted replica set off (consequences.py); bootstrap.py connects it.
        self.consequences = Consequences()
        self.dir_failures = LogDirFailures(self.log_dir)  # bootstrap.py says what an offline directory stops
        self.dir_space = LogDirSpace(self.log_dir)  # bootstrap.py sets its reserve; the checkpointer measures
        self.descriptor_budget = descriptor_budget  # bounds the descriptors the hosted logs hold (None: unbounded)

    # --- start-up -----------------------------------------------------------------

    def _recovery_points(self) -> dict[tuple[str, int], int]:
        """The recovery-point checkpoint; an unreadable one only accelerates, so every log is scanned whole
        instead (the HW and log-start checkpoints cannot be derived, and an unreadable one stops the start)."""
        try:
            return read_offsets_checkpoint(self.log_dir / RECOVERY_POINT_CHECKPOINT_FILE)
        except CheckpointError as exc:
            log.error("recovering every log from its first segment: %s", exc)
            return {}

    def load(self) -> None:
        """Open and recover every local partition log; HW from the checkpoint (a bad file stops start-up)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.clean_start = take_clean_shutdown_marker(self.log_dir)
        for leftover in set_aside_directories(self.log_dir):
            self._remover.remove_later(leftover)  # deleted before the last stop, not yet removed
        high_watermarks = read_offsets_checkpoint(self.log_dir / HW_CHECKPOINT_FILE)
        recovery_points = self._recovery_points()
        log_starts = read_offsets_checkpoint(self.log_dir / LOG_START_OFFSET_CHECKPOINT_FILE)
        dropped = 0
        for topic_partition, path in local_partition_directories(self.log_dir).items():
            key = (topic_partition.topic, topic_partition.partition)
            # No recovery point recorded: scan every segment (rolled ones may never have been fsynced).
            partition_log = PartitionLog.open(path, self.log_config_of(topic_partition.topic), self._clock,
                                              recovery_point=recovery_points.get(key, 0),
                                              log_start_offset=log_starts.get(key, 0))
            report = partition_log.recovery_report
            if not report.clean:
                dropped += report.bytes_dropped
                log.warning("%s: start-up recovery dropped %d bytes from %s (%s)", topic_partition,
                            report.bytes_dropped, report.segment, report.reason)
            high_watermark = high_watermarks.get(key, 0)
            lost = lost_committed_records(*key, high_watermark, partition_log.log_end_offset)
            if lost is not None:
                self.lost_records.append(lost)
                log.error("%s: lost %d committed records: the high watermark was checkpointed at %d, the log "
                          "recovered after %s ends at %d", topic_partition, lost.count, high_watermark,
                          "a clean stop" if self.clean_start else "an unclean shutdown", partition_log.log_end_offset)
            self._put(topic_partition, HostedPartition(
                topic_partition, self.broker_id, partition_log,
                high_watermark=high_watermark,
                producer_state=rebuild_from_log(partition_log, self._producer_state_limits),
                remove_directory=self._remover.remove_later, consequences=self.consequences,
                dir_failures=self.dir_failures, dir_space=self.dir_space, descriptor_budget=self.descriptor_budget,
            ))
        log.info("loaded %d local replicas from %s after %s (recovery dropped %d bytes in all)",
                 len(self._partitions), self.log_dir, "a clean stop" if self.clean_start else "an unclean shutdown",
                 dropped)

    def delete_unassigned(self, is_assigned_here: Callable[[TopicPartition], bool]) -> list[TopicPartition]:
        """Delete local replicas the cluster no longer assigns to this broker (seed v3 §E)."""
        doomed = [tp for tp in self.topic_partitions() if not is_assigned_here(tp)]
        for topic_partition in doomed:
            log.info("%s: not assigned to broker %d any more; deleting the local replica", topic_partition,
                     self.broker_id)
            self.delete(topic_partition)
        return doomed

    # --- lookups ---------------------------------------------------------------------

    def get(self, topic_partition: TopicPartition) -> HostedPartition | None:
        hosted = self._partitions.get(topic_partition)
        return hosted if hosted is not None and hosted.usable else None

    def get_or_create(self, topic_partition: TopicPartition) -> HostedPartition:
        with self._lock:
            hosted = self._partitions.get(topic_partition)
            if hosted is None or not hosted.usable:
                directory = partition_directory(self.log_dir, topic_partition)
                partition_log = PartitionLog.open(directory, self.log_config_of(topic_partition.topic), self._clock)
                hosted = HostedPartition(
                    topic_partition, self.broker_id, partition_log,
                    high_watermark=0, producer_state=rebuild_from_log(partition_log, self._producer_state_limits),
                    remove_directory=self._remover.remove_later, consequences=self.consequences,
                    dir_failures=self.dir_failures, dir_space=self.dir_space, descriptor_budget=self.descriptor_budget,
                )
                self._put(topic_partition, hosted)
                self._created_since_settle += 1
                log.debug("%s: hosting a new replica at %s", topic_partition, directory)
            return hosted

    def take_created(self) -> int:
        """Replicas created since the last call (the checkpointer settles the collector after many)."""
        with self._lock:
            created, self._created_since_settle = self._created_since_settle, 0
            return created

    def topic_partitions(self) -> list[TopicPartition]:
        with self._lock:
            return [tp for tp, hosted in self._partitions.items() if hosted.usable]

    def hosted(self) -> list[HostedPartition]:
        with self._lock:
            return [hosted for hosted in self._partitions.values() if hosted.usable]

    def hosts_topic(self, topic: str) -> bool:
        """Any replica of `topic` here (one being deleted counts until it is forgotten)."""
        with self._lock:
            return topic in self._per_topic

    def produce_progress(self, topic_partition: TopicPartition) -> ProduceProgress:
        hosted = self.get(topic_partition)
        progress = None if hosted is None else produce_progress(hosted)
        return _NOT_HOSTED if progress is None else progress

    def apply_log_config(self, topic: str, config: LogConfig) -> None:
        """A topic's log settings changed: every running replica of it takes them now."""
        if not self.hosts_topic(topic):
            return
        for hosted in self.hosted():
            if hosted.topic_partition.topic == topic:
                update_log_config(hosted, config)

    # --- removal -----------------------------------------------------------------------

    def delete(self, topic_partition: TopicPartition) -> None:
        with self._lock:
            hosted = self._pop(topic_partition)
        if hosted is not None:
            hosted.delete_unassigned()

    def forget(self, topic_partition: TopicPartition) -> None:
        """Drop a replica whose log is already deleted (StopReplica with delete)."""
        with self._lock:
            hosted = self._partitions.get(topic_partition)
            if hosted is not None and not hosted.usable:
                self._pop(topic_partition)

    def _put(self, topic_partition: TopicPartition, hosted: HostedPartition) -> None:
        if topic_partition not in self._partitions:
            self._per_topic[topic_partition.topic] = self._per_topic.get(topic_partition.topic, 0) + 1
        self._partitions[topic_partition] = hosted

    def _pop(self, topic_partition: TopicPartition) -> HostedPartition | None:
        hosted = self._partitions.pop(topic_partition, None)
        if hosted is not None:
            left = self._per_topic[topic_partition.topic] - 1
            if left:
                self._per_topic[topic_partition.topic] = left
            else:
                del self._per_topic[topic_partition.topic]
        return hosted

    # --- checkpoints and shutdown ---------------------------------------------------------

    def write_checkpoints(self, *, flush_if_due: bool = True) -> None:
        """Read every replica's offsets and write them, as one step against other writers (the
        checkpointer, AdvanceLogStartOffset): a write never replaces newer values with older ones."""
        with self._checkpoint_lock:
            offsets = {}
            for hosted in self.hosted():
                values = hosted.checkpoint_offsets(flush_if_due=flush_if_due)
                if values is not None:
                    offsets[(hosted.topic_partition.topic, hosted.topic_partition.partition)] = values
            self._write(offsets)

    def close(self) -> None:
        """Flush and close every log, then checkpoint HWs and recovery points one last time."""
        offsets = {}
        for hosted in self.hosted():
            values = hosted.close()
            if values is not None:
                offsets[(hosted.topic_partition.topic, hosted.topic_partition.partition)] = values
        self._write(offsets)
        write_clean_shutdown_marker(self.log_dir)

    def _write(self, offsets: dict[tuple[str, int], tuple[int, int, int]]) -> None:
        """Rewrite the checkpoint files, unless they would say what they already say."""
        with self._checkpoint_lock:
            if offsets == self._checkpointed:
                return
            write_offsets_checkpoint(self.log_dir / HW_CHECKPOINT_FILE, {k: v[0] for k, v in offsets.items()})
            write_offsets_checkpoint(self.log_dir / RECOVERY_POINT_CHECKPOINT_FILE,
                                     {k: v[1] for k, v in offsets.items()})
            write_offsets_checkpoint(self.log_dir / LOG_START_OFFSET_CHECKPOINT_FILE,
                                     {k: v[2] for k, v in offsets.items()})
            self._checkpointed = offsets

    # --- metrics ---------------------------------------------------------------------------

    def summary(self, min_insync_replicas_of: Callable[[str], int]) -> PartitionSummary:
        counts = dict(partition_count=0, leader_count=0, under_replicated=0, under_min_isr=0, at_min_isr=0,
                      offline_replicas=0)
        for hosted in self.hosted():
            state = hosted.run(_state)
            counts["partition_count"] += 1
            if state.role is ReplicaRole.OFFLINE:
                counts["offline_replicas"] += 1
            if state.role is not ReplicaRole.LEADER:
                continue
            min_isr = min_insync_replicas_of(hosted.topic_partition.topic)
            counts["leader_count"] += 1
            counts["under_replicated"] += len(state.isr) < len(state.replicas)
            counts["under_min_isr"] += len(state.isr) < min_isr
            counts["at_min_isr"] += len(state.isr) == min_isr
        return PartitionSummary(**counts)


def _state(hosted: HostedPartition):
    return hosted.replica.state, NO_EFFECTS
