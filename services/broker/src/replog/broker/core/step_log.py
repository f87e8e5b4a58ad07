"""What a partition step needs of the partition it runs on: the log it writes, and how to read producers from it.

Theory of operation (docs/architecture.md, "Partition steps"):

The steps in leader_steps.py and follower_steps.py decide and order everything a
leader's append, a follower's fetch at its leader, a follower's append and a
follower's truncation do. They write through `StepLog`, the part of
`replog.broker.log.PartitionLog` they call (it satisfies the protocol
structurally; the broker simulation in tests/scenario/broker gives an in-memory
log of its own), so the broker and its simulation run the same sequence.

Batches are opaque here: bytes for PartitionLog, records for a test's log. What
the core needs from a batch, its producer header, comes through
`ProducerBatches`, which each log's owner provides with the log
(replicas/producer_headers.py for PartitionLog).

A step runs on a `StepPartition`: the replica core, its log and the idempotent
producer table, which a truncation replaces with one rebuilt from the log. The
caller holds whatever lock guards them (replicas/hosted_partition.py) and maps
the log's exceptions (storage errors) to answers; a step lets them through with
nothing else changed after the failing write.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from replog.broker.core.log_view import LogView
from replog.broker.core.produce.producer_state import BatchHeader, ProducerStateLimits, ProducerStateTable
from replog.broker.core.replica import PartitionReplica


class AppendedOffsets(Protocol):
    """What a leader's append reports back (`replog.broker.log.AppendInfo` satisfies it)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def last_offset(self) -> int: ...


class ProducedHeader(Protocol):
    """The producer fields of a validated batch, read by the idempotence check before the append."""

    @property
    def producer_id(self) -> int: ...

    @property
    def producer_epoch(self) -> int: ...

    @property
    def base_sequence(self) -> int: ...

    @property
    def record_count(self) -> int: ...


class StepLog(LogView, Protocol):
    """The writes and the read the partition steps make on a replica's log."""

    def append_as_leader(self, batch: Any, leader_epoch: int, *, fsync: bool, validated: Any) -> AppendedOffsets:
        """Append one producer batch at the LEO, stamped with `leader_epoch`."""
        ...

    def append_as_follower(self, batches: Any, *, fsync: bool) -> Any:
        """Append a leader's batches as they are; what `ProducerBatches.replicated` reads, None if empty."""
        ...

    def read(self, start_offset: int, max_bytes: int, upper_offset: int | None = None) -> Any:
        """Whole batches from `start_offset`, below `upper_offset`, about `max_bytes` of them."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Cut the log to end at `offset` (<= LEO) and its epoch cache with it."""
        ...

    def truncate_fully_and_start_at(self, offset: int) -> None: ...

    def advance_log_start_offset(self, offset: int) -> bool:
        """Records below `offset` (<= LEO) become unreadable; False when the start is already there."""
        ...


class ProducerBatches(Protocol):
    """The producer headers of a log's batches, in the core's shape (KIP-98 replay)."""

    def stored(self, header: Any, base_offset: int) -> BatchHeader | None:
        """The batch a leader just wrote at `base_offset`; None when it has no producer."""
        ...

    def replicated(self, appended: Any) -> Iterable[BatchHeader]:
        """The batches one follower append wrote (what `StepLog.append_as_follower` returned)."""
        ...

    def written_below(self, batches: Any, first_offset: int, end_offset: int) -> Iterable[BatchHeader]:
        """The batches of `batches` in [first_offset, end_offset): the part of an append that failed midway
        which reached the log."""
        ...

    def rebuild(self, log: Any, limits: ProducerStateLimits) -> ProducerStateTable:
        """The table derived from the whole log (after a truncation)."""
        ...


class StepPartition(Protocol):
    """One replica as a step sees it; `producer_state` is replaced when a truncation rebuilds it."""

    @property
    def replica(self) -> PartitionReplica: ...

    @property
    def log(self) -> StepLog: ...

    @property
    def producer_batches(self) -> ProducerBatches: ...

    producer_state: ProducerStateTable
