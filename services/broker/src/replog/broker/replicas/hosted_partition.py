"""One replica hosted on this broker: its lock, everything the lock guards, and its long-poll waiters.

Theory of operation (docs/architecture.md, "Threads"; one lock per partition, taken in one place):

A `HostedPartition` owns the replica's `PartitionLog`, its pure
`PartitionReplica` core and its idempotent producer table. Every read or change
of those is a *step*, a function run by `run` under the partition's lock: it asks the core what
to do, does the log I/O the answer names, and returns its answer with the
`Effects` it caused (core/effects.py); for an append, a follower's fetch and a
follower's truncation the core's step functions do both in their order
(core/leader_steps.py, core/follower_steps.py, which read producers from the log
through `producer_batches`). `run` is the only code that takes the
lock; it holds it for the step alone, never across an RPC or a wait, and acts on
the effects after releasing it (consequences.py). The role-specific steps live
beside it (leader_side.py, follower_side.py).

Lock order: the turn, then a partition lock; the delayed produces' lock may be
taken before a partition lock (to read a replica's progress), never after, which
is why effects wait for the release.

Waiters: a long poll (consumer Fetch, follower fetch session) parks one `Waiter`
(long_poll.py) here, and `wake` notifies the ones the effects name. The waiter
set has its own small lock and is replaced, never changed in place, so waking
needs no lock at all.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Callable, TypeVar

from replog.broker.core.effects import NO_EFFECTS, STATE_CHANGED, Effects, Wake
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate
from replog.broker.core.partition import Applied, LeaderAndIsrDecision, PartitionOutcome, Unchanged
from replog.broker.core.produce.producer_state import ProducerStateTable
from replog.broker.core.replica import PartitionReplica
from replog.broker.log import PartitionLog
from replog.broker.log.descriptors import DescriptorBudget
from replog.broker.replicas.consequences import Consequences
from replog.broker.logdirs.log_dir_failures import LogDirFailures
from replog.broker.logdirs.log_dir_space import LogDirSpace
from replog.broker.replicas.long_poll import Waiter
from replog.broker.logdirs.partition_dirs import set_aside_directory
from replog.broker.replicas.producer_headers import PARTITION_LOG_PRODUCERS
from replog.common.core.partitions import TopicPartition

A = TypeVar("A")


class HostedPartition:
    producer_batches = PARTITION_LOG_PRODUCERS  # how the core's steps read producers from the log (core/step_log.py)

    def __init__(
        self,
        topic_partition: TopicPartition,
        broker_id: int,
        log: PartitionLog,
        *,
        high_watermark: int,
        producer_state: ProducerStateTable,
        remove_directory: Callable[[Path], None] = shutil.rmtree,
        consequences: Consequences | None = None,
        dir_failures: LogDirFailures | None = None,
        dir_space: LogDirSpace | None = None,
        descriptor_budget: DescriptorBudget | None = None,
    ) -> None:
        self.topic_partition = topic_partition
        # its log directory's channel for storage errors (logdirs/log_dir_failures.py); a test's partition gets its own
        self.dir_failures = LogDirFailures(log.directory.parent) if dir_failures is None else dir_failures
        self.dir_space = LogDirSpace(log.directory.parent) if dir_space is None else dir_space  # no reserve
        self._remove_directory = remove_directory  # a deleted log's directory, once renamed aside
        self._consequences = Consequences() if consequences is None else consequences
        self.broker_id = broker_id
        self.lock = threading.Lock()  # in the broker only `run` (and the descriptor budget, non-blocking) takes it
        self.log = log
        if descriptor_budget is not None:  # every call on the log holds `lock`: the budget may take it to evict
            log.track_descriptors(descriptor_budget.register(self.lock, log.release_descriptors))
        self.replica = PartitionReplica(topic_partition, broker_id,
                                        high_watermark=min(high_watermark, log.log_end_offset))
        self.producer_state = producer_state
        self.usable = True  # False once the log is deleted or closed
        self.waiters: frozenset[Waiter] = frozenset()  # replaced under `_waiters_lock`, never changed
        self._waiters_lock = threading.Lock()

    # --- steps --------------------------------------------------------------------------

    def run(self, step: Callable[..., tuple[A, Effects]], *args, deferred: list | None = None) -> A:
        """Run `step(self, *args)` under the lock and return its answer; then act on its effects, or,
        given `deferred`, add (self, effects) to it for the caller to `act_on` later."""
        with self.lock:
            answer, effects = step(self, *args)
        if effects is not NO_EFFECTS:
            if deferred is None:
                self._consequences.apply(self, effects)
            else:
                deferred.append((self, effects))
        return answer

    def act_on(self, effects: Effects) -> None:
        """The effects of a step run with `deferred` (no lock may be held)."""
        self._consequences.apply(self, effects)

    # --- long-poll waiters ------------------------------------------------------------

    def add_waiter(self, waiter: Waiter) -> None:
        with self._waiters_lock:
            self.waiters = self.waiters | {waiter}

    def remove_waiter(self, waiter: Waiter) -> None:
        with self._waiters_lock:
            self.waiters = self.waiters - {waiter}

    def wake(self, who: Wake = Wake.EVERYONE, isr: tuple[int, ...] = ()) -> None:
        """Tell the long polls parked here to look again: `who` says which (core/effects.py).

        A consumer's poll waits for the HW; a follower's fetch session waits for records (its
        min_bytes is at least 1), so a HW move only notes the partition for it (Waiter.note): it
        reads it again before it answers, and the answer carries the new HW."""
        waiters = self.waiters  # replaced, never changed: this is the set at this moment
        if not waiters:
            return
        if who is Wake.EVERYONE:
            for waiter in waiters:
                waiter.notify(self)
        elif who is Wake.CONSUMERS:
            for waiter in waiters:
                if waiter.replica_id is None:
                    waiter.notify(self)
                else:
                    waiter.note(self)
        elif who is Wake.FOLLOWERS_OUTSIDE_ISR:
            for waiter in waiters:
                if waiter.replica_id is not None and waiter.replica_id not in isr:
                    waiter.notify(self)

    # --- controller requests ------------------------------------------------------

    def apply_leader_and_isr(
        self, decision: LeaderAndIsrDecision, now_ms: int, min_insync_replicas_of: Callable[[str], int] = lambda t: 1
    ) -> tuple[PartitionOutcome, HighWatermarkUpdate | None]:
        """Apply one decision; also returns the leader's HW change for an update at its own epoch.
        `min_insync_replicas_of(topic)` is read under the lock, so a config change that finds this replica
        not leading yet cannot be missed by a leadership this decision starts."""
        return self.run(_apply_leader_and_isr, decision, now_ms, min_insync_replicas_of)

    def apply_min_insync_replicas(self, value: int) -> HighWatermarkUpdate | None:
        """The topic's min.insync.replicas changed (a leader may release or hold its HW)."""
        return self.run(_apply_min_insync_replicas, value)

    def stop(self, *, leader_epoch: int, delete: bool) -> PartitionOutcome:
        """StopReplica: a stopped replica is forgotten (a fresh core, same log), or deleted."""
        return self.run(_stop, leader_epoch, delete)

    def delete_unassigned(self) -> None:
        """Remove a replica the controller no longer assigns here (INIT LeaderAndIsr, or at start-up)."""
        self.run(_delete_unassigned)

    # --- durability -----------------------------------------------------------------

    def checkpoint_offsets(self, *, flush_if_due: bool) -> tuple[int, int, int] | None:
        """(high watermark, recovery point, log start) for the checkpoint files; None once deleted."""
        return self.run(_checkpoint_offsets, flush_if_due)

    def sync_rolled_segments(self) -> None:
        """fsync segments rolled since the last call, without holding the lock during the fsync.

        The broker's logs do not fsync a segment inside the append that rolls it (that would
        stall the partition's produces and fetches); the checkpointer calls this every tick
        instead. The recovery point moves past them only afterwards, so a crash before then
        rescans them at start-up.
        """
        if not self.log.has_rolled_segments_to_sync:  # read without the lock: a miss waits one tick
            return
        taken = self.run(_rolled_segments_to_sync)
        if taken is None or not taken[1]:
            return
        token, pending = taken
        try:
            for fd, _ in pending:
                os.fsync(fd)
        finally:
            for fd, _ in pending:
                os.close(fd)
        self.run(_rolled_segments_synced, token, pending[-1][1])

    def close(self) -> tuple[int, int, int] | None:
        """Flush and close the log (shutdown); (HW, recovery point, log start) as of closing."""
        return self.run(_close)


# --- the steps above, each run under the partition's lock -------------------------------


def _apply_leader_and_isr(hosted: HostedPartition, decision: LeaderAndIsrDecision, now_ms: int,
                          min_insync_replicas_of: Callable[[str], int]):
    assert hosted.usable, hosted.topic_partition
    min_insync_replicas = min_insync_replicas_of(decision.topic_partition.topic)
    step = hosted.replica.leader_and_isr_step(decision, log=hosted.log, now_ms=now_ms,
                                              min_insync_replicas=min_insync_replicas)
    return (step.outcome, step.high_watermark_update), step.effects


def _apply_min_insync_replicas(hosted: HostedPartition, value: int):
    if not hosted.usable:
        return None, NO_EFFECTS
    return hosted.replica.on_min_insync_replicas(value, log=hosted.log)


def _stop(hosted: HostedPartition, leader_epoch: int, delete: bool):
    if not hosted.usable:
        return Unchanged(hosted.replica.state, "already deleted or closed"), NO_EFFECTS
    outcome = hosted.replica.on_stop_replica(leader_epoch=leader_epoch, delete=delete)
    if not isinstance(outcome, Applied):
        return outcome, NO_EFFECTS
    hosted.replica = PartitionReplica(hosted.topic_partition, hosted.broker_id,
                                      high_watermark=hosted.replica.high_watermark)
    if delete:
        hosted.usable = False
        _retire_log(hosted)
    return outcome, STATE_CHANGED


def _delete_unassigned(hosted: HostedPartition):
    if not hosted.usable:
        return None, NO_EFFECTS
    hosted.usable = False
    hosted.replica = PartitionReplica(hosted.topic_partition, hosted.broker_id)
    _retire_log(hosted)
    return None, STATE_CHANGED


def _retire_log(hosted: HostedPartition) -> None:
    """Close the log and rename its directory aside now; the files go later (logdirs/directory_remover.py)."""
    aside = set_aside_directory(hosted.log.directory)
    hosted.log.retire(aside)
    hosted._remove_directory(aside)


def _checkpoint_offsets(hosted: HostedPartition, flush_if_due: bool):
    if not hosted.usable:
        return None, NO_EFFECTS
    if flush_if_due:
        hosted.log.maybe_flush()
    return (hosted.replica.high_watermark, hosted.log.recovery_point, hosted.log.log_start_offset), NO_EFFECTS


def _rolled_segments_to_sync(hosted: HostedPartition):
    return (hosted.log.rolled_segments_to_sync() if hosted.usable else None), NO_EFFECTS


def _rolled_segments_synced(hosted: HostedPartition, token: int, next_offset: int):
    if hosted.usable:
        hosted.log.rolled_segments_synced(token, next_offset)
    return None, NO_EFFECTS


def _close(hosted: HostedPartition):
    if not hosted.usable:
        return None, NO_EFFECTS
    start = hosted.log.log_start_offset
    hosted.log.close()
    hosted.usable = False
    return (hosted.replica.high_watermark, hosted.log.recovery_point, start), STATE_CHANGED
