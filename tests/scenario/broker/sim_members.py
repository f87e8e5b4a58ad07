"""The members of the simulated cluster: the controller stand-in and each broker's glue.

`SimController` plays the ZooKeeper controller for one partition: clean elections
(first live assigned replica in the ISR, then, with `elr`, in the eligible leader
replicas the controller's own rule keeps: core/elr.py), a new leader epoch on every
change it makes, and AlterPartition checks. `SimBroker` holds what a real broker's adapters
would: a fake log, a `PartitionReplica`, a producer-state table and a produce
purgatory; it is the partition the core's steps run on (core/step_log.StepPartition),
as a broker's `HostedPartition` is. `DiskLog` is its log on a simulated disk: what
was written without fsync is lost at a power loss, whole or torn, and an fsync may fail. `SimCluster` (sim_cluster.py) drives them.
"""

from __future__ import annotations

import errno
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.broker.core.partition import NO_LEADER, LeaderAndIsrDecision, ReplicaRole
from replog.broker.core.produce.produce import DelayedProduce
from replog.broker.core.produce.producer_state import ProducerStateTable
from replog.broker.core.produce.purgatory import Purgatory
from replog.broker.core.replica import PartitionReplica
from replog.broker.logdirs.log_dir_failures import LogDirFailures, halts_broker
from replog.common.core.partitions import TopicPartition
from replog.controller.core.elr import next_elr
from tests.unit.broker.core.fake_log import FAKE_PRODUCERS, FakeAppendInfo, FakeBatchHeader, FakeLog, FakeRecord

TP = TopicPartition("orders", 0)
REPLICAS = (1, 2, 3)
MIN_INSYNC_REPLICAS = 2
REPLICA_LAG_TIME_MAX_MS = 10_000
PRODUCE_TIMEOUT_MS = 5_000
FETCH_RECORDS_MAX = 4
SIM_LOG_DIR = Path("/simulated/log-dir")  # named in storage errors; nothing is read or written there


@dataclass
class ProduceTicket:
    """What a client sees for one produce request."""

    payload: str
    acks: int
    broker_id: int
    error_code: ErrorCode | None = None  # what the client saw; None while waiting
    broker_code: ErrorCode | None = None  # what the broker answered (the answer may still be on the wire)
    base_offset: int = -1
    producer_id: int = -1
    sequence: int = -1
    op: DelayedProduce | None = None

    @property
    def done(self) -> bool:
        return self.error_code is not None

    @property
    def ok(self) -> bool:
        return self.error_code is ErrorCode.NONE


class DiskLog(FakeLog):
    """A fake log on a simulated disk: appends without fsync sit in the page cache until a power loss.

    A power loss keeps a prefix of what was written since the last fsync, cut at a batch boundary (a
    batch is one record here): the real log's recovery (log/recovery.py) keeps every whole batch up to
    the first one whose length or CRC fails and cuts the file there. All of it may be gone, or some or
    all of it may have reached the platter (a torn write): `lose_unsynced` takes the fraction of the
    unsynced batches that survive, drawn by the schedule when it chose the fault.

    `fail_next_fsync(kept_fraction)` makes the next append's fsync fail: the batches are in the page cache
    (the log end counts them) and the append raises OSError(EIO), as PartitionLog's does; the broker then
    halts and `kept_fraction` is what its torn tail keeps (sim_cluster.halt). Linux may drop the pages of a
    failed fsync, so a later fsync that succeeds does not make them durable (logdirs/log_dir_failures.py):
    until a power loss or a truncation below them, nothing from there on counts as synced. Only a broker
    that carried on after the failure (a planted bug, mutations.py) appends again.

    `verified_end` is the simulation's own note (sim_invariants.py): below it, every record was found
    equal to the committed one at its offset. A truncation lowers it; an append leaves it."""

    def __init__(self) -> None:
        super().__init__()
        self.synced_end_offset = 0
        self.verified_end = 0
        self.failing_fsync: float | None = None  # armed: the next append's fsync fails; what its halt keeps
        self.failed_fsync: float | None = None  # the fsync that failed: what the halt after it keeps
        self.sync_failed = False  # pages from synced_end_offset on may be gone, whatever a later fsync says

    def append_as_leader(self, batch: str, leader_epoch: int, *, fsync: bool,
                         validated: FakeBatchHeader) -> FakeAppendInfo:
        info = super().append_as_leader(batch, leader_epoch, fsync=fsync, validated=validated)
        self._synced(fsync)
        return info

    def append_as_follower(self, batches: list[FakeRecord], *, fsync: bool) -> list[FakeRecord] | None:
        appended = super().append_as_follower(batches, fsync=fsync)
        if appended is not None:
            self._synced(fsync)
        return appended

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        if offset <= self.synced_end_offset:
            self.synced_end_offset = offset
            self.sync_failed = False  # the pages that failed to sync are cut off
        self.verified_end = min(self.verified_end, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        super().truncate_fully_and_start_at(offset)
        self.synced_end_offset = offset
        self.sync_failed = False
        self.verified_end = offset

    def fail_next_fsync(self, kept_fraction: float) -> None:
        self.failing_fsync = kept_fraction

    def lose_unsynced(self, kept_fraction: float | None = None) -> tuple[int, int]:
        """A power loss: the log comes back at its last fsync plus the surviving prefix of what followed,
        `kept_fraction` of it rounded down (None: nothing survives). Returns (records lost, records kept
        that were never synced)."""
        synced_end = max(self.synced_end_offset, self.log_start_offset)
        unsynced = self.log_end_offset - synced_end
        if unsynced <= 0:
            return 0, 0
        kept = 0 if kept_fraction is None else min(unsynced, int(kept_fraction * (unsynced + 1)))
        if kept < unsynced:
            self.truncate_to(synced_end + kept)
        self.synced_end_offset = self.log_end_offset  # what survived is what the disk holds now
        self.sync_failed = False
        return unsynced - kept, kept

    def _synced(self, fsync: bool) -> None:
        if not fsync:
            return
        if self.failing_fsync is not None:  # written to the page cache, not to the disk
            self.failed_fsync, self.failing_fsync = self.failing_fsync, None
            self.sync_failed = True
            raise OSError(errno.EIO, "Input/output error (a simulated fsync failure)")
        if not self.sync_failed:
            self.synced_end_offset = self.log_end_offset


class SimController:
    def __init__(self, *, elr: bool = False) -> None:
        """`elr`: keep eligible leader replicas (KIP-966) and elect from them once the ISR is gone."""
        self.use_elr = elr
        self.elr: tuple[int, ...] = ()
        self.live: set[int] = set(REPLICAS)
        self.broker_epochs: dict[int, int] = {b: 0 for b in REPLICAS}  # registration epoch per broker
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.isr: tuple[int, ...] = REPLICAS
        self.partition_epoch = -1

    def decision(self) -> LeaderAndIsrDecision:
        return LeaderAndIsrDecision(TP, self.leader, self.leader_epoch, self.isr, self.partition_epoch, REPLICAS)

    def elect(self) -> None:
        """Clean election, and a new leader epoch for every change the controller writes."""
        candidates = [r for r in REPLICAS if r in self.isr and r in self.live]
        if self.leader not in candidates:
            self.leader = candidates[0] if candidates else NO_LEADER
        if self.leader == NO_LEADER and self.use_elr:
            eligible = [r for r in self.elr if r in self.live]
            if eligible:  # the ISR is gone; an ELR member holds every committed record (strict min ISR)
                self.leader = eligible[0]
                self._set_isr((self.leader,))
        self.leader_epoch += 1
        self.partition_epoch += 1

    def broker_lost(self, broker_id: int) -> None:
        self.live.discard(broker_id)
        if broker_id in self.isr and len(self.isr) > 1:  # the last ISR member stays (clean elections only)
            self._set_isr(tuple(r for r in self.isr if r != broker_id))
        self.elect()

    def started_uncleanly(self, broker_id: int) -> None:
        """A broker came back without a clean shutdown: it leaves the ELR (its log may have lost its tail)."""
        self.elr = tuple(r for r in self.elr if r != broker_id)

    def _set_isr(self, isr: tuple[int, ...]) -> None:
        if self.use_elr:
            self.elr = next_elr(isr_before=self.isr, elr_before=self.elr, isr_after=isr,
                                min_isr=MIN_INSYNC_REPLICAS, replicas=REPLICAS)
        self.isr = isr

    def _stale_new_member(self, proposal: AlterPartitionProposal) -> bool:
        """A member joining the ISR named with another registration than its current one (KIP-903, as
        the controller's handlers/alter_partition.py). This stub registers brokers from epoch 0, so it
        cannot also refuse 0 as unknown the way the controller does."""
        return any(member not in self.isr and epoch != self.broker_epochs[member]
                   for member, epoch in zip(proposal.new_isr, proposal.new_isr_broker_epochs, strict=True))

    def broker_back(self, broker_id: int) -> None:
        self.register(broker_id)
        self.live.add(broker_id)
        if self.leader == NO_LEADER and (broker_id in self.isr or broker_id in self.elr):
            self.elect()

    def register(self, broker_id: int) -> int:
        """A broker (re)registers: a new registration epoch fences its earlier incarnation."""
        self.broker_epochs[broker_id] += 1
        return self.broker_epochs[broker_id]

    def alter_partition(
        self, broker_id: int, broker_epoch: int, proposal: AlterPartitionProposal
    ) -> AlterPartitionAnswer | None:
        """The per-partition answer, or None for a request-level refusal (STALE_BROKER_EPOCH)."""
        if broker_id not in self.live or broker_epoch != self.broker_epochs[broker_id]:
            return None
        error = ErrorCode.NONE
        if proposal.leader_epoch != self.leader_epoch or broker_id != self.leader:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif proposal.partition_epoch != self.partition_epoch:
            error = ErrorCode.INVALID_UPDATE_VERSION
        elif not set(proposal.new_isr) <= self.live or self._stale_new_member(proposal):
            error = ErrorCode.INELIGIBLE_REPLICA
        if error is ErrorCode.NONE:
            self._set_isr(proposal.new_isr)
            self.partition_epoch += 1
        return AlterPartitionAnswer(error, self.leader, self.leader_epoch, self.isr, self.partition_epoch)


@dataclass
class SimBroker:
    broker_id: int
    log: FakeLog
    replica: PartitionReplica
    producer_state: ProducerStateTable
    purgatory: Purgatory[DelayedProduce, TopicPartition]
    broker_epoch: int = 0  # registration epoch this incarnation carries in AlterPartition
    incarnation: int = 0  # its process: a restart is a new one, and what was sent to the old one is lost
    fetch_call: object = None  # its latest fetch to its leader: as a gRPC call, only that one's answer is read
    alive: bool = True
    isolated: bool = False  # cut off from the controller, still reachable by brokers and clients
    inbox: deque[LeaderAndIsrDecision] = field(default_factory=deque)
    # Its one log directory's storage-error channel, the broker's own (logdirs/log_dir_failures.py): a failed
    # append takes it offline, and it tells the process, which halts (`halting`: why; sim_cluster.halt).
    dir_failures: LogDirFailures = field(default_factory=lambda: LogDirFailures(SIM_LOG_DIR))
    halting: str | None = None
    producer_batches: ClassVar = FAKE_PRODUCERS  # how the core's steps read producers from the fake log

    def __post_init__(self) -> None:
        self.dir_failures.connect(self._went_offline)

    def _went_offline(self, reason: str) -> None:
        """The directory's callback, as control/offline_dirs.py's: its only directory is gone, so it halts."""
        if halts_broker([not self.dir_failures.offline]):
            self.halting = reason

    @property
    def role(self) -> ReplicaRole:
        return self.replica.state.role

    @property
    def leader_epoch(self) -> int:
        return self.replica.state.leader_epoch
