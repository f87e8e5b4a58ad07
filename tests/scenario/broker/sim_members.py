"""The members of the simulated cluster: the controller stand-in and each broker's glue.

`SimController` plays the ZooKeeper controller for one partition: clean elections
(first live assigned replica in the ISR), a new leader epoch on every change it
makes, and AlterPartition checks. `SimBroker` holds what a real broker's adapters
would: a fake log, a `PartitionReplica`, a producer-state table and a produce
purgatory; it is the partition the core's steps run on (core/step_log.StepPartition),
as a broker's `HostedPartition` is. `SimCluster` (sim_cluster.py) drives them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.broker.core.partition import NO_LEADER, LeaderAndIsrDecision, ReplicaRole
from replog.broker.core.produce import DelayedProduce
from replog.broker.core.producer_state import ProducerStateTable
from replog.broker.core.purgatory import Purgatory
from replog.broker.core.replica import PartitionReplica
from replog.common.core.partitions import TopicPartition
from tests.unit.broker.core.fake_log import FAKE_PRODUCERS, FakeLog

TP = TopicPartition("orders", 0)
REPLICAS = (1, 2, 3)
MIN_INSYNC_REPLICAS = 2
REPLICA_LAG_TIME_MAX_MS = 10_000
PRODUCE_TIMEOUT_MS = 5_000
FETCH_RECORDS_MAX = 4


@dataclass
class ProduceTicket:
    """What a client sees for one produce request."""

    payload: str
    acks: int
    broker_id: int
    error_code: ErrorCode | None = None  # None while waiting
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


class SimController:
    def __init__(self) -> None:
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
        self.leader_epoch += 1
        self.partition_epoch += 1

    def broker_lost(self, broker_id: int) -> None:
        self.live.discard(broker_id)
        if broker_id in self.isr and len(self.isr) > 1:  # the last ISR member stays (clean elections only)
            self.isr = tuple(r for r in self.isr if r != broker_id)
        self.elect()

    def broker_back(self, broker_id: int) -> None:
        self.register(broker_id)
        self.live.add(broker_id)
        if self.leader == NO_LEADER and broker_id in self.isr:
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
        elif not set(proposal.new_isr) <= self.live:
            error = ErrorCode.INELIGIBLE_REPLICA
        if error is ErrorCode.NONE:
            self.isr = proposal.new_isr
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
    alive: bool = True
    isolated: bool = False  # cut off from the controller, still reachable by brokers and clients
    inbox: deque[LeaderAndIsrDecision] = field(default_factory=deque)
    producer_batches: ClassVar = FAKE_PRODUCERS  # how the core's steps read producers from the fake log

    @property
    def role(self) -> ReplicaRole:
        return self.replica.state.role

    @property
    def leader_epoch(self) -> int:
        return self.replica.state.leader_epoch
