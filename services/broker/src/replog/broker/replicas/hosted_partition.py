"""One replica hosted on this broker: its lock and everything the lock guards.

Theory of operation (docs/architecture.md, "Data flow"; one lock per partition, not one big
lock taken in many places):

A `HostedPartition` owns the replica's `PartitionLog`, its pure
`PartitionReplica` core, its idempotent producer table and the long-poll
waiters parked on it. Every read or change of those goes through `lock`,
held only for the few calls into the core and the log that one step needs,
never across an RPC or a wait. The role-specific steps live beside it
(leader_side.py, follower_side.py) and take the lock themselves.

Lock order: the delayed-produce lock may be taken before a partition lock
(to read a replica's progress), never after; so nothing holding a
partition lock touches the delayed produces. Callers collect what a step
changed (an HW that advanced, effects to run) and act on it after release.

Waiters: a long-poll (consumer Fetch, follower ReplicaFetch) registers one
`Waiter` (long_poll.py) with each partition it reads; `wake()` notifies them,
naming this partition, when records are appended or the role changes. A HW
move wakes the consumers' polls and only tells the followers' fetch sessions
(`high_watermark_moved_locked`). No polling loop.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Callable

from replog.broker.core.leader import HighWatermarkUpdate
from replog.broker.core.partition import Applied, LeaderAndIsrDecision, PartitionOutcome, Unchanged
from replog.broker.core.producer_state import ProducerStateTable
from replog.broker.core.replica import PartitionReplica
from replog.broker.core.topic_partition import TopicPartition
from replog.broker.log import PartitionLog
from replog.broker.replicas.long_poll import Waiter
from replog.broker.replicas.partition_dirs import set_aside_directory


class HostedPartition:
    def __init__(
        self,
        topic_partition: TopicPartition,
        broker_id: int,
        log: PartitionLog,
        *,
        high_watermark: int,
        producer_state: ProducerStateTable,
        remove_directory: Callable[[Path], None] = shutil.rmtree,
    ) -> None:
        self.topic_partition = topic_partition
        self._remove_directory = remove_directory  # a deleted log's directory, once renamed aside
        self.broker_id = broker_id
        self.lock = threading.Lock()
        self.log = log
        self.replica = PartitionReplica(topic_partition, broker_id, high_watermark=min(high_watermark, log.log_end_offset))
        self.producer_state = producer_state
        self.usable = True  # False once the log is deleted or closed
        self._waiters: set[Waiter] = set()

    # --- long-poll waiters ------------------------------------------------------------

    def add_waiter(self, waiter: Waiter) -> None:
        with self.lock:
            self._waiters.add(waiter)

    def remove_waiter(self, waiter: Waiter) -> None:
        with self.lock:
            self._waiters.discard(waiter)

    def wake_locked(self) -> None:
        """Wake every long-poll parked here; the caller holds `lock`."""
        for waiter in self._waiters:
            waiter.notify(self)

    def high_watermark_moved_locked(self) -> None:
        """Tell the long polls parked here that the HW moved; the caller holds `lock`.

        A consumer's poll is woken: the HW is what lets it read. A follower's fetch session is
        only told (Waiter.note): it waits for records (its min_bytes is at least 1), which a HW
        move does not bring, so a wake-up only made it read the partition again and go back to
        sleep -- once per acks=all write on the leader, for the follower whose fetch did not move
        the HW, just as that write's answer was due, and after a failover once per moved
        partition and follower. It reads the partition again before it answers, so the answer
        carries the new HW."""
        for waiter in self._waiters:
            if waiter.replica_id is None:
                waiter.notify(self)
            else:
                waiter.note(self)

    def wake(self) -> None:
        with self.lock:
            self.wake_locked()

    # --- controller requests ------------------------------------------------------

    def apply_leader_and_isr(
        self, decision: LeaderAndIsrDecision, now_ms: int
    ) -> tuple[PartitionOutcome, HighWatermarkUpdate | None]:
        """Apply one decision; also returns the leader's HW change for an ISR-only update."""
        with self.lock:
            assert self.usable, self.topic_partition
            leader_before = self.replica.leader
            replicas_before = None if leader_before is None else leader_before.replicas
            hw_before = self.replica.high_watermark
            outcome = self.replica.on_leader_and_isr(decision, log=self.log, now_ms=now_ms)
            hw_update = None
            if isinstance(outcome, Applied):
                leader = self.replica.leader
                if leader_before is not None and leader is leader_before:
                    hw_update = HighWatermarkUpdate(hw_before, leader.high_watermark)
                    if not hw_update.advanced and leader.replicas == replicas_before:
                        self._wake_followers_outside(leader.isr)
                        return outcome, hw_update
                self.wake_locked()
            return outcome, hw_update

    def _wake_followers_outside(self, isr: tuple[int, ...]) -> None:
        """An ISR-only change that moved neither the HW nor the assignment: nothing a parked read
        would answer differently, except that a follower outside the ISR may now be proposed
        back in, so only its fetch session is woken. (After a broker failure the followers'
        sessions carried thousands of such partitions, and re-reading all of them held the
        leaders back while they served the moved partitions.)"""
        for waiter in self._waiters:
            if waiter.replica_id is not None and waiter.replica_id not in isr:
                waiter.notify(self)

    def stop(self, *, leader_epoch: int, delete: bool) -> PartitionOutcome:
        """StopReplica: a stopped replica is forgotten (a fresh core, same log), or deleted."""
        with self.lock:
            if not self.usable:
                return Unchanged(self.replica.state, "already deleted or closed")
            outcome = self.replica.on_stop_replica(leader_epoch=leader_epoch, delete=delete)
            if isinstance(outcome, Applied):
                high_watermark = self.replica.high_watermark
                self.replica = PartitionReplica(self.topic_partition, self.broker_id, high_watermark=high_watermark)
                if delete:
                    self.usable = False
                    self._delete_log()
                self.wake_locked()
            return outcome

    def delete_unassigned(self) -> None:
        """Remove a replica the controller no longer assigns here (seed v3 §E, INIT LeaderAndIsr)."""
        with self.lock:
            if self.usable:
                self.usable = False
                self.replica = PartitionReplica(self.topic_partition, self.broker_id)
                self._delete_log()
                self.wake_locked()

    def _delete_log(self) -> None:
        """Close the log and rename its directory aside now; the files go later (directory_remover.py)."""
        aside = set_aside_directory(self.log.directory)
        self.log.retire(aside)
        self._remove_directory(aside)

    # --- durability -----------------------------------------------------------------

    def checkpoint_offsets(self, *, flush_if_due: bool) -> tuple[int, int] | None:
        """(high watermark, recovery point) for the checkpoint files; None once deleted."""
        with self.lock:
            if not self.usable:
                return None
            if flush_if_due:
                self.log.maybe_flush()
            return self.replica.high_watermark, self.log.recovery_point

    def sync_rolled_segments(self) -> None:
        """fsync segments rolled since the last call, without holding the lock during the fsync.

        The broker's logs do not fsync a segment inside the append that rolls it
        (a 64 MiB fsync would stall this partition's produces and fetches); the
        checkpointer calls this every tick instead. The recovery point moves past
        them only afterwards, so a crash before then rescans them at start-up.
        """
        if not self.log.has_rolled_segments_to_sync:  # read without the lock: a miss waits one tick
            return
        with self.lock:
            if not self.usable:
                return
            token, pending = self.log.rolled_segments_to_sync()
        if not pending:
            return
        try:
            for fd, _ in pending:
                os.fsync(fd)
        finally:
            for fd, _ in pending:
                os.close(fd)
        with self.lock:
            if self.usable:
                self.log.rolled_segments_synced(token, pending[-1][1])

    def close(self) -> tuple[int, int] | None:
        """Flush and close the log (shutdown); (HW, recovery point) as of closing."""
        with self.lock:
            if not self.usable:
                return None
            self.log.close()
            self.usable = False
            self.wake_locked()
            return self.replica.high_watermark, self.log.recovery_point
