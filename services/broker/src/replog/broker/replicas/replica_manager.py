"""The replicas this broker hosts: loading them at start-up, looking them up, checkpoints.

Theory of operation (docs/architecture.md, "Data flow", "Storage"):

`ReplicaManager` is the registry of `HostedPartition`s. Its own lock guards
only membership (which partitions exist); each partition has its own lock for
everything else. The broker's log directories are logdirs/log_dirs.py's: a new replica
goes to the online one with the fewest replicas, and each keeps its own checkpoint
files and clean-shutdown marker. At start-up `load()` opens every partition
directory under every log directory (logdirs/directory_load.py), running each log's recovery from its
checkpointed recovery point (a torn or corrupt tail is cut and reported), loads the HW checkpoint and
rebuilds each replica's producer table from its log. It takes the clean-shutdown
marker first (log/clean_shutdown.py): without it the last stop was a crash or a
power loss, and a replica whose recovered log ends below its checkpointed HW has
lost committed records; those are listed in `lost_records` for the broker to
report (the HW is still clamped to the log end, now loudly). A directory that cannot
be read at start (an OSError, an unreadable HW or log-start checkpoint) goes offline
then, as after a storage error at run time: the partitions found in it are not
hosted, are reported as its offline replicas (`offline_partitions`), and are never
created afresh in another directory (`offline_directory_of`). Partitions no longer
assigned here are deleted (`delete_unassigned`, seed v3 §E) before the broker
registers. `write_checkpoints()` atomically rewrites, in each online directory,
the HW file and the recovery-point and log-start files (checkpoints.py: temp,
fsync, rename, fsync dir) for the replicas there; the checkpointer calls it
periodically and `close()` once more after flushing every log, then writes the
clean-shutdown markers. An OSError in a directory takes that directory offline
(logdirs/log_dir_failures.py) and nothing more is written there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.core.partition import ReplicaRole
from replog.broker.core.produce.produce import ProduceProgress
from replog.broker.core.produce.producer_state import ProducerStateLimits, ProducerStateTable
from replog.broker.log import LogConfig, LostRecords, PartitionLog, write_clean_shutdown_marker
from replog.broker.log.descriptors import DescriptorBudget
from replog.broker.logdirs import directory_load
from replog.broker.replicas.consequences import Consequences
from replog.broker.logdirs.directory_remover import DirectoryRemover
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import produce_progress
from replog.broker.logdirs.log_dirs import (
    DuplicateReplicaError,
    LogDirectory,
    NoOnlineLogDirError,
    Offsets,
    build_directories,
    place,
)
from replog.broker.maintenance.log_maintenance import update_log_config
from replog.broker.logdirs.partition_dirs import partition_directory
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.broker.runtime.metrics import PartitionSummary
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)

_NOT_HOSTED = ProduceProgress(is_leader=False, leader_epoch=-1, high_watermark=-1, isr_size=0, leading_since_epoch=-1)


class ReplicaManager:
    def __init__(self, *, broker_id: int, log_dirs: Sequence[Path], log_config: LogConfig, clock: Clock,
                 producer_state_limits: ProducerStateLimits = ProducerStateLimits(),
                 log_config_of: Callable[[str], LogConfig] | None = None,
                 descriptor_budget: DescriptorBudget | None = None) -> None:
        self.broker_id = broker_id
        self.directories: tuple[LogDirectory, ...] = build_directories(log_dirs)
        self._directory_at = {d.path: d for d in self.directories}
        self._per_directory: dict[Path, int] = {}  # entries in _partitions per log directory, for placement
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
        self.clean_start = True  # the last stop left the clean-shutdown marker (set by `load`)
        self.lost_records: list[LostRecords] = []  # committed records recovery could not find (set by `load`)
        # replicas found at start in a directory that went offline then: never hosted, never created elsewhere
        self._offline_at_start: dict[TopicPartition, LogDirectory] = {}
        # What the steps on every hosted replica set off (consequences.py); bootstrap.py connects it.
        self.consequences = Consequences()
        self.descriptor_budget = descriptor_budget  # bounds the descriptors the hosted logs hold (None: unbounded)

    # --- start-up -----------------------------------------------------------------

    def load(self) -> None:
        """Open and recover every local partition log of every directory, HWs from the checkpoints
        (logdirs/directory_load.py). A directory that cannot be listed, whose HW or log-start checkpoint is
        unreadable or one of whose logs cannot be opened goes offline at start, the replicas found in it
        with it, and the others are loaded; start-up stops when no directory is left
        (`NoOnlineLogDirError`) or a partition is found in two (`DuplicateReplicaError`)."""
        scans = [directory_load.scan(directory) for directory in self.directories]
        found: dict[TopicPartition, Path] = {}
        for topic_partition, path in ((tp, p) for s in scans for tp, p in s.partitions.items()):
            if topic_partition in found:
                raise DuplicateReplicaError(f"{topic_partition} is in both {found[topic_partition]} and {path}; "
                                            f"remove the stale copy")
            found[topic_partition] = path
        dropped = 0
        for directory, scan in zip(self.directories, scans):
            loaded = None if not directory.online else directory_load.open_logs(
                directory, scan, log_config_of=self.log_config_of, clock=self._clock,
                producer_state_limits=self._producer_state_limits)
            if loaded is None:
                self._offline_at_start.update((tp, directory) for tp in scan.partitions)
                continue
            for leftover in scan.leftovers:
                self._remover.remove_later(leftover)  # deleted before the last stop, not yet removed
            self.lost_records.extend(loaded.lost_records)
            dropped += loaded.bytes_dropped
            for replica in loaded.replicas:
                self._put(replica.topic_partition, self._hosted(directory, *replica))
        online = [d for d in self.directories if d.online]
        if not online:
            raise NoOnlineLogDirError("no log directory can be used: " + "; ".join(
                f"{d.path} ({d.failures.offline_reason})" for d in self.directories))
        self.clean_start = all(s.clean for d, s in zip(self.directories, scans) if d.online)
        log.info("loaded %d local replicas from %s after %s (recovery dropped %d bytes in all)%s",
                 len(self._partitions), ", ".join(str(d.path) for d in online),
                 "a clean stop" if self.clean_start else "an unclean shutdown", dropped,
                 f"; {len(self._offline_at_start)} more are offline with their directories"
                 if self._offline_at_start else "")

    def _hosted(self, directory: LogDirectory, topic_partition: TopicPartition, partition_log: PartitionLog,
                high_watermark: int, producer_state: ProducerStateTable) -> HostedPartition:
        return HostedPartition(
            topic_partition, self.broker_id, partition_log, high_watermark=high_watermark,
            producer_state=producer_state,
            remove_directory=self._remover.remove_later, consequences=self.consequences,
            dir_failures=directory.failures, dir_space=directory.space, descriptor_budget=self.descriptor_budget,
        )

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
                assert topic_partition not in self._offline_at_start, f"{topic_partition}: its directory is offline"
                log_directory = place(self.directories, self._per_directory)
                if log_directory is None:
                    raise OSError(f"every log directory is offline: {topic_partition} cannot be created")
                directory = partition_directory(log_directory.path, topic_partition)
                try:
                    partition_log = PartitionLog.open(directory, self.log_config_of(topic_partition.topic),
                                                      self._clock)
                except OSError as exc:  # never retried (logdirs/log_dir_failures.py)
                    log_directory.failures.failed(f"opening the log of {topic_partition}", exc)
                    raise
                hosted = self._hosted(log_directory, topic_partition, partition_log, 0,
                                      rebuild_from_log(partition_log, self._producer_state_limits))
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

    def apply_min_insync_replicas(self, topic: str, value: int) -> None:
        """A topic's min.insync.replicas changed: its leaders here judge their HW by it now."""
        if not self.hosts_topic(topic):
            return
        for hosted in self.hosted():
            if hosted.topic_partition.topic == topic:
                hosted.apply_min_insync_replicas(value)

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
        old = self._partitions.get(topic_partition)
        if old is None:
            self._per_topic[topic_partition.topic] = self._per_topic.get(topic_partition.topic, 0) + 1
        else:
            self._count_in_directory(old, -1)
        self._count_in_directory(hosted, 1)
        self._partitions[topic_partition] = hosted

    def _count_in_directory(self, hosted: HostedPartition, change: int) -> None:
        path = hosted.log.directory.parent
        self._per_directory[path] = self._per_directory.get(path, 0) + change

    def _pop(self, topic_partition: TopicPartition) -> HostedPartition | None:
        hosted = self._partitions.pop(topic_partition, None)
        if hosted is not None:
            self._count_in_directory(hosted, -1)
            left = self._per_topic[topic_partition.topic] - 1
            if left:
                self._per_topic[topic_partition.topic] = left
            else:
                del self._per_topic[topic_partition.topic]
        return hosted

    # --- checkpoints and shutdown ---------------------------------------------------------

    def directory_of(self, hosted: HostedPartition) -> LogDirectory:
        return self._directory_at[hosted.log.directory.parent]

    def replica_counts(self) -> dict[Path, int]:
        with self._lock:
            return dict(self._per_directory)

    def offline_partitions(self, directory: LogDirectory) -> list[TopicPartition]:
        """The replicas that live in `directory` (all offline once it is), those it had when it went
        offline at start included."""
        hosted_here = {h.topic_partition for h in self.hosted() if h.log.directory.parent == directory.path}
        return sorted(hosted_here | {tp for tp, d in self._offline_at_start.items() if d is directory})

    def offline_directory_of(self, topic_partition: TopicPartition) -> LogDirectory | None:
        """The directory a replica was found in at start when that directory went offline then (`load`):
        such a replica is not hosted, and must not be created afresh in another directory."""
        return self._offline_at_start.get(topic_partition)

    def _by_directory(self) -> dict[Path, list[HostedPartition]]:
        grouped: dict[Path, list[HostedPartition]] = {d.path: [] for d in self.directories}
        for hosted in self.hosted():
            grouped[hosted.log.directory.parent].append(hosted)
        return grouped

    def sync_rolled_segments(self) -> None:
        """fsync what every online directory's logs rolled (a checkpointer round); an OSError takes that
        directory offline."""
        for path, hosted_here in self._by_directory().items():
            directory = self._directory_at[path]
            try:
                for hosted in hosted_here:
                    if directory.online:
                        hosted.sync_rolled_segments()
            except OSError as exc:  # never retried (logdirs/log_dir_failures.py)
                directory.failures.failed("an fsync of rolled segments", exc)

    def flush_due(self) -> None:
        """Flush the logs whose interval flush is due, in every online directory."""
        self._each_online(lambda hosted: hosted.checkpoint_offsets(flush_if_due=True), "a flush")

    def write_checkpoints(self, *, flush_if_due: bool = True, strict: bool = False) -> None:
        """Read every replica's offsets and write them, directory by directory, as one step against other
        writers (the checkpointer, AdvanceLogStartOffset): a write never replaces newer values with older
        ones. An OSError takes its directory offline; the others are still written, and then, when
        `strict` (a caller that must answer whether its change is durable), the first error is raised."""
        with self._checkpoint_lock:
            errors = self._each_online(lambda hosted: hosted.checkpoint_offsets(flush_if_due=flush_if_due),
                                       "a checkpoint or flush", write=True)
        if strict and errors:
            raise errors[0]

    def _each_online(self, offsets_of: Callable[[HostedPartition], tuple[int, int, int] | None], during: str,
                     *, write: bool = False) -> list[OSError]:
        """Run `offsets_of` on every replica of each online directory (and write its checkpoints); the
        errors that took directories offline."""
        errors: list[OSError] = []
        for path, hosted_here in self._by_directory().items():
            directory = self._directory_at[path]
            if not directory.online:
                continue
            offsets: Offsets = {}
            try:
                for hosted in hosted_here:
                    values = offsets_of(hosted)
                    if values is not None:
                        offsets[(hosted.topic_partition.topic, hosted.topic_partition.partition)] = values
                if write:
                    directory.write_checkpoints(offsets)
            except OSError as exc:  # never retried (logdirs/log_dir_failures.py)
                directory.failures.failed(during, exc)
                errors.append(exc)
        return errors

    def close(self) -> None:
        """Flush and close every log, then checkpoint HWs and recovery points one last time and mark each
        online directory's stop clean. An offline directory gets nothing: its next start recovers it."""
        with self._checkpoint_lock:
            self._each_online(HostedPartition.close, "the flush at shutdown", write=True)
            for directory in self.directories:
                if directory.online:
                    write_clean_shutdown_marker(directory.path)

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

