"""Produce admission and the completion rule of a delayed (acks=-1) produce.

Theory of operation (docs/architecture.md, "Produce"; seed ReplicaManager
`appendRecords`, `isValidRequiredAcks`; Kafka `Partition.appendRecordsToLeader`,
`checkEnoughReplicasReachOffset`, `DelayedProduce`):

Order per partition, as the adapter runs it:
1. `admit_produce`: acks must be 0, 1 or -1 (INVALID_REQUIRED_ACKS); this
   replica must lead (NOT_LEADER); for acks=-1 the committed ISR must hold at
   least min.insync.replicas members (NOT_ENOUGH_REPLICAS, before any append).
2. Idempotence check (producer_state.py), append, record the producer state.
   A duplicate is answered with its original offsets and then treated like an
   append of those offsets: for acks=-1 it too waits for the HW.
3. acks=0/1: answer now. acks=-1: build a `ProduceWait` per partition and park
   a `DelayedProduce` in the purgatory keyed by those partitions.

A wait is resolved when (`produce_completion`):
- the replica does not lead, or has not led without a break since the append
  -> NOT_LEADER (as a follower in between it may have truncated the batch; the
  client retries). A leader epoch raised while the same broker keeps leading
  (a reassignment does this) is no break: a leader never truncates its own
  log, so the batch is still at its offsets and completes when the HW covers
  it. Answering NOT_LEADER there would make a producer without idempotence
  write the batch twice. The HW of the new epoch passes the batch only once
  the ISR holds the whole log up to the epoch's start (core/isr/high_watermark.py), so
  the acknowledgement keeps its meaning,
- HW >= last_offset + 1 -> NONE if the committed ISR still has
  min.insync.replicas members, else NOT_ENOUGH_REPLICAS_AFTER_APPEND (the batch
  is committed, but on fewer replicas than asked),
- the HW held below the batch because the committed ISR is smaller than
  min.insync.replicas (strict min ISR, core/isr/high_watermark.py) ->
  NOT_ENOUGH_REPLICAS_AFTER_APPEND at once: the batch is in the leader's log but
  cannot be committed until the ISR grows back, and the client, told now, may
  retry (an idempotent retry is answered as a duplicate) instead of waiting out
  its timeout,
and an unresolved wait at the deadline -> REQUEST_TIMED_OUT. A resolved
partition keeps its result; the op completes when every partition resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

from replog.broker.core.errors import ErrorCode, Refusal
from replog.common.core.partitions import TopicPartition

ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1
VALID_ACKS = frozenset({ACKS_NONE, ACKS_LEADER, ACKS_ALL})


@dataclass(frozen=True)
class ProduceAdmitted:
    acks: int

    @property
    def waits_for_replication(self) -> bool:
        return self.acks == ACKS_ALL


def admit_produce(
    *, acks: int, is_leader: bool, isr_size: int, min_insync_replicas: int
) -> ProduceAdmitted | Refusal:
    if acks not in VALID_ACKS:
        return Refusal(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, not {acks}")
    if not is_leader:
        return Refusal(ErrorCode.NOT_LEADER, "this broker does not lead the partition")
    if acks == ACKS_ALL and isr_size < min_insync_replicas:
        return Refusal(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"ISR has {isr_size} members, min.insync.replicas is {min_insync_replicas}",
        )
    return ProduceAdmitted(acks)


class ProduceProgress(NamedTuple):
    """What the replica looks like now, for deciding a wait."""

    is_leader: bool
    leader_epoch: int
    high_watermark: int
    isr_size: int
    leading_since_epoch: int  # the first leader epoch of this broker's unbroken leadership (-1: not leading)
    high_watermark_held: bool = False  # the committed ISR is below min.insync.replicas: the HW does not move


class ProduceWait(NamedTuple):
    """One appended (or duplicate) batch waiting for the HW."""

    topic_partition: TopicPartition
    leader_epoch: int
    base_offset: int
    last_offset: int
    min_insync_replicas: int

    @property
    def required_offset(self) -> int:
        return self.last_offset + 1


class ProduceResult(NamedTuple):
    topic_partition: TopicPartition
    error_code: ErrorCode
    base_offset: int
    leader_epoch: int


def produce_completion(wait: ProduceWait, progress: ProduceProgress) -> ProduceResult | None:
    """The result of `wait` now, or None while it must keep waiting."""
    if not progress.is_leader or not progress.leading_since_epoch <= wait.leader_epoch <= progress.leader_epoch:
        return _result(wait, ErrorCode.NOT_LEADER)
    if progress.high_watermark < wait.required_offset:
        return _result(wait, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND) if progress.high_watermark_held else None
    if progress.isr_size < wait.min_insync_replicas:
        return _result(wait, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    return _result(wait, ErrorCode.NONE)


class DelayedProduce:
    """A purgatory op for one acks=-1 request over one or more partitions.

    `progress_of(tp)` reads the current replica state (the adapter passes a
    lookup into its replicas). Keys to watch: `keys`.
    """

    def __init__(
        self, waits: Sequence[ProduceWait], progress_of: Callable[[TopicPartition], ProduceProgress]
    ) -> None:
        assert waits, "a delayed produce waits for at least one partition"
        self._waits = tuple(waits)
        self._progress_of = progress_of
        self._results: dict[TopicPartition, ProduceResult] = {}
        self._unresolved: dict[TopicPartition, ProduceWait] = {w.topic_partition: w for w in self._waits}

    @property
    def keys(self) -> tuple[TopicPartition, ...]:
        return tuple(w.topic_partition for w in self._waits)

    @property
    def results(self) -> tuple[ProduceResult, ...]:
        assert self.is_done, "results are read once the op completed or expired"
        return tuple(self._results[w.topic_partition] for w in self._waits)

    @property
    def is_done(self) -> bool:
        return len(self._results) == len(self._waits)

    def try_complete(self, changed: TopicPartition | None = None) -> bool:
        """Resolve what can be resolved; with `changed`, only that partition is read again."""
        if changed is None:
            candidates = list(self._unresolved.values())
        else:
            wait = self._unresolved.get(changed)
            candidates = [] if wait is None else [wait]
        for wait in candidates:
            result = produce_completion(wait, self._progress_of(wait.topic_partition))
            if result is not None:
                self._results[wait.topic_partition] = result
                del self._unresolved[wait.topic_partition]
        return self.is_done

    def on_expire(self) -> None:
        for wait in self._waits:
            self._results.setdefault(wait.topic_partition, _result(wait, ErrorCode.REQUEST_TIMED_OUT))
        self._unresolved.clear()


def _result(wait: ProduceWait, error_code: ErrorCode) -> ProduceResult:
    return ProduceResult(wait.topic_partition, error_code, wait.base_offset, wait.leader_epoch)
