"""Leader state of one partition: follower progress, HW, ISR proposals.

Theory of operation (docs/architecture.md, "High watermark and ISR"; seed v2 "Writes";
KIP-101, KIP-320, KIP-497; Kafka `Partition.updateFollowerFetchState`,
`maybeExpandIsr`, `maybeShrinkIsr`, `maybeIncrementLeaderHW`):

A `LeaderReplica` exists while this broker leads the partition in one leader
epoch; a new epoch gets a new object (follower progress from an earlier epoch
means nothing). It owns, and is the only code that changes:
- the committed ISR and partition epoch as the leader knows them,
- each assigned follower's `FollowerProgress` (core/isr/follower_progress.py),
- the high watermark (core/isr/high_watermark.py),
- at most one pending AlterPartition proposal (core/isr/isr_proposal.py).

Events and what they return (every result is a frozen value):
- `on_follower_fetch(...)`: Refusal | DivergingEpoch | FollowerRead (core/fetch/follower_fetch.py). A read
  tells the adapter the range to send, the HW to put in the response, and its
  effects (effects.py): whether the HW advanced, and an ISR expansion to send.
- `on_local_append(log)` (an ISR of one commits at once), `set_min_insync_replicas(value, log)`: HighWatermarkUpdate.
- `maybe_shrink_isr(...)`: an AlterPartitionProposal or None.
- `on_alter_partition_answer(...)`: an outcome of core/isr/isr_answer.py, which also
  holds the rules; `proposal_to_resend` says what the adapter sends again
  after a transport failure. A follower refused as INELIGIBLE_REPLICA waits
  before it is proposed again (isr_proposal.IneligibleReplicas).
- `apply_committed_state(...)`: a LeaderAndIsr ISR-only update (same leader epoch).
- `offset_for_leader_epoch(...)`: answers a follower's OffsetForLeaderEpoch.

Invariants: the leader is in its committed ISR; ISR within the assignment;
HW never decreases and never passes the leader's LEO (all asserted); the
ISR view (committed + pending) stays a superset of any ISR the controller
may hold, so a pending proposal leaves only on an answer that proves the
controller's state, or on a LeaderAndIsr (core/isr/isr_answer.py).
"""

from __future__ import annotations

from replog.broker.core.effects import after_follower_fetch
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import check_leader_epoch
from replog.broker.core.fetch.follower_fetch import DivergingEpoch, FollowerFetchResult, FollowerRead, check_position
from replog.broker.core.isr.follower_progress import (
    FollowerProgress,
    after_fetch,
    before_append,
    is_out_of_sync,
    may_rejoin_isr,
)
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate, held_below_min_isr, leader_high_watermark
from replog.broker.core.isr.isr_answer import (
    AdoptState,
    AlterPartitionOutcome,
    AnswerIgnored,
    DropProposal,
    IgnoreAnswer,
    IsrCommitted,
    IsrRefreshed,
    ProposalDropped,
    ProposalStillPending,
    judge_answer,
    stale_answer_reason,
)
from replog.broker.core.isr.isr_proposal import (
    AlterPartitionAnswer,
    AlterPartitionProposal,
    IneligibleReplicas,
    IsrChangeKind,
    in_assignment_order,
    maximal_isr,
)
from replog.broker.core.log_view import EpochEndOffset, LogView, epoch_end_offset
from replog.common.core.partitions import TopicPartition


class LeaderReplica:
    """The leader's view of one partition in one leader epoch. See the module docstring."""

    def __init__(
        self,
        *,
        topic_partition: TopicPartition,
        broker_id: int,
        leader_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        partition_epoch: int,
        epoch_start_offset: int,
        high_watermark: int,
        now_ms: int,
        min_insync_replicas: int = 1,
    ) -> None:
        assert high_watermark <= epoch_start_offset, (high_watermark, epoch_start_offset)
        self._topic_partition = topic_partition
        self._broker_id = broker_id
        self._leader_epoch = leader_epoch
        self._epoch_start_offset = epoch_start_offset
        self._high_watermark = high_watermark
        self._min_insync_replicas = min_insync_replicas
        self._pending: AlterPartitionProposal | None = None
        self._awaiting_new_state = False
        self._replicas: tuple[int, ...] = ()
        self._isr: tuple[int, ...] = ()
        self._partition_epoch = partition_epoch
        self._followers: dict[int, FollowerProgress] = {}
        self._ineligible: IneligibleReplicas | None = None  # made at the first refusal: most leaders never see one
        # replica -> (fetch offset, last fetched epoch) of its last fetch found consistent with our log
        self._accepted_position: dict[int, tuple[int, int]] = {}
        # replica -> the broker epoch its last accepted fetch named: the incarnation its progress is about
        self._follower_broker_epochs: dict[int, int] = {}
        self._set_membership(replicas, isr, now_ms=now_ms)

    @classmethod
    def start(
        cls,
        *,
        topic_partition: TopicPartition,
        broker_id: int,
        leader_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        partition_epoch: int,
        high_watermark: int,
        log: LogView,
        now_ms: int,
        min_insync_replicas: int = 1,
    ) -> LeaderReplica:
        """Take over leadership: the epoch starts at our LEO; the inherited HW is kept (clamped to LEO),
        unless the ISR is only us (and min.insync.replicas allows it): then the whole log is committed at
        once (Kafka's makeLeader). No append or fetch may come to move it: a producer's retries of records
        already here are duplicates, and no follower fetches."""
        leader = cls(
            topic_partition=topic_partition, broker_id=broker_id, leader_epoch=leader_epoch, replicas=replicas,
            isr=isr, partition_epoch=partition_epoch, epoch_start_offset=log.log_end_offset,
            high_watermark=min(high_watermark, log.log_end_offset), now_ms=now_ms,
            min_insync_replicas=min_insync_replicas,
        )
        leader._update_high_watermark(log)
        return leader

    # --- read-only views ---------------------------------------------------

    @property
    def topic_partition(self) -> TopicPartition:
        return self._topic_partition

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @property
    def epoch_start_offset(self) -> int:
        return self._epoch_start_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def high_watermark_settled(self) -> bool:
        """True once the HW reached this epoch's start (>= any HW published before; KIP-207)."""
        return self._high_watermark >= self._epoch_start_offset

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR (what the controller holds)."""
        return self._isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return maximal_isr(self._isr, self._pending)

    @property
    def partition_epoch(self) -> int:
        return self._partition_epoch

    @property
    def replicas(self) -> tuple[int, ...]:
        return self._replicas

    @property
    def pending_proposal(self) -> AlterPartitionProposal | None:
        return self._pending

    @property
    def proposal_to_resend(self) -> AlterPartitionProposal | None:
        """The pending proposal, unless the controller told us we are stale (then await LeaderAndIsr)."""
        return None if self._awaiting_new_state else self._pending

    def follower_progress(self, replica_id: int) -> FollowerProgress:
        return self._followers[replica_id]

    # --- events --------------------------------------------------------------

    def on_follower_fetch(
        self,
        *,
        replica_id: int,
        current_leader_epoch: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        replica_broker_epoch: int,
        now_ms: int,
        log: LogView,
    ) -> FollowerFetchResult:
        """A follower's ReplicaFetch for this partition; see the module docstring. `replica_broker_epoch`
        (the follower's registration, 0 when it did not say) is what an ISR expansion names it with."""
        refusal = self._refuse_follower(replica_id, current_leader_epoch)
        if refusal is not None:
            return refusal
        # A repeat fetch names the position this follower's last accepted fetch named (an idle
        # partition in a follower's every request). The log only grew since, so the position is
        # still consistent; the follower's LEO did not move, so neither did the HW it bounds (every
        # other input to the HW has its own event). Only the caught-up time and a rejoin can change.
        repeat = (self._accepted_position.get(replica_id) == (fetch_offset, last_fetched_epoch)
                  and log.log_start_offset <= fetch_offset)
        if not repeat:
            problem = check_position(log, fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch)
            if isinstance(problem, Refusal):
                return problem
            if problem is not None:
                return DivergingEpoch(problem, self._high_watermark, log.log_start_offset, self._leader_epoch)
        self._follower_broker_epochs[replica_id] = replica_broker_epoch
        self._followers[replica_id] = after_fetch(
            self._followers[replica_id],
            fetch_offset=fetch_offset,
            leader_log_end_offset=log.log_end_offset,
            now_ms=now_ms,
        )
        if repeat:
            hw_update = HighWatermarkUpdate(self._high_watermark, self._high_watermark)
        else:
            self._accepted_position[replica_id] = (fetch_offset, last_fetched_epoch)
            hw_update = self._update_high_watermark(log)
        proposal = self._maybe_expand_isr(replica_id, now_ms)
        return FollowerRead(
            fetch_offset=fetch_offset,
            read_upto_offset=log.log_end_offset,
            high_watermark=self._high_watermark,
            log_start_offset=log.log_start_offset,
            leader_epoch=self._leader_epoch,
            high_watermark_update=hw_update,
            isr_proposal=proposal,
            effects=after_follower_fetch(hw_update.current > hw_update.previous, proposal is not None),
        )

    def on_local_append(self, log: LogView, *, appended_from: int, now_ms: int) -> HighWatermarkUpdate:
        """After an append at `appended_from` (the LEO before it); see core/isr/follower_progress.py's append rule."""
        for replica_id, progress in self._followers.items():  # values only: the dict keeps its size
            self._followers[replica_id] = before_append(progress, leader_log_end_offset=appended_from, now_ms=now_ms)
        return self._update_high_watermark(log)

    def set_min_insync_replicas(self, value: int, log: LogView) -> HighWatermarkUpdate:
        """The topic's min.insync.replicas changed: a lower one may release a held HW at once."""
        self._min_insync_replicas = value
        self._judge_min_isr()
        return self._update_high_watermark(log)

    def maybe_shrink_isr(
        self, *, now_ms: int, replica_lag_time_max_ms: int, log: LogView
    ) -> AlterPartitionProposal | None:
        """Propose dropping followers not caught up within the lag limit (never the leader)."""
        if self._pending is not None:
            return None
        lagging = {
            replica_id
            for replica_id in self._isr
            if replica_id != self._broker_id
            and is_out_of_sync(
                self._followers[replica_id],
                leader_log_end_offset=log.log_end_offset,
                now_ms=now_ms,
                replica_lag_time_max_ms=replica_lag_time_max_ms,
            )
        }
        if not lagging:
            return None
        return self._propose(set(self._isr) - lagging, IsrChangeKind.SHRINK)

    def on_alter_partition_answer(
        self, proposal: AlterPartitionProposal, answer: AlterPartitionAnswer, log: LogView
    ) -> AlterPartitionOutcome:
        """The controller's per-partition answer to `proposal` (the one the RPC carried), judged by
        the rules of core/isr/isr_answer.py and applied here."""
        is_pending = proposal == self._pending
        stale = stale_answer_reason(answer, broker_id=self._broker_id, leader_epoch=self._leader_epoch,
                                    partition_epoch=self._partition_epoch, replicas=self._replicas)
        verdict = judge_answer(answer, is_pending=is_pending, stale_reason=stale)
        if isinstance(verdict, AdoptState):
            # A proposal made at an older partition epoch than the state adopted can never be accepted (the
            # controller checks the epoch); kept, it would wait forever for a LeaderAndIsr that brings nothing new.
            if is_pending or (self._pending is not None and self._pending.partition_epoch < answer.partition_epoch):
                self._clear_pending()
            self._isr = in_assignment_order(answer.isr, self._replicas)
            self._judge_min_isr()
            self._partition_epoch = answer.partition_epoch
            hw_update = self._update_high_watermark(log)
            if verdict.accepts_pending:
                return IsrCommitted(self._isr, self._partition_epoch, proposal.kind, hw_update)
            return IsrRefreshed(self._isr, self._partition_epoch, hw_update)
        if isinstance(verdict, IgnoreAnswer):
            return AnswerIgnored(verdict.reason)
        if isinstance(verdict, DropProposal):
            self._clear_pending()
            if self._ineligible is None:
                self._ineligible = IneligibleReplicas()
            self._ineligible.refused(set(proposal.new_isr) - set(self._isr))
            return ProposalDropped(answer.error_code, proposal, self._update_high_watermark(log))
        self._awaiting_new_state = verdict.await_new_state
        return ProposalStillPending(answer.error_code, proposal, resend=not verdict.await_new_state)

    def apply_committed_state(
        self,
        *,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        partition_epoch: int,
        log: LogView,
        now_ms: int,
    ) -> HighWatermarkUpdate:
        """A LeaderAndIsr at our leader epoch with a newer partition epoch (replaces any proposal)."""
        assert partition_epoch > self._partition_epoch, (partition_epoch, self._partition_epoch)
        self._clear_pending()
        self._partition_epoch = partition_epoch
        self._set_membership(replicas, isr, now_ms=now_ms)
        return self._update_high_watermark(log)

    def offset_for_leader_epoch(
        self, *, current_leader_epoch: int, requested_leader_epoch: int, log: LogView
    ) -> EpochEndOffset | Refusal:
        """OffsetForLeaderEpoch from a follower: the largest epoch <= requested and its end (KIP-101)."""
        refusal = check_leader_epoch(current_leader_epoch, self._leader_epoch, unset_allowed=True)
        if refusal is not None:
            return refusal
        return epoch_end_offset(log, requested_leader_epoch)

    # --- internals -------------------------------------------------------------

    def _refuse_follower(self, replica_id: int, current_leader_epoch: int) -> Refusal | None:
        if replica_id == self._broker_id:
            return Refusal(ErrorCode.INVALID_REQUEST, f"broker {replica_id} fetched from itself")
        if replica_id not in self._followers:
            return Refusal(
                ErrorCode.NOT_ASSIGNED_REPLICA,
                f"replica {replica_id} not in assignment {self._replicas} of {self._topic_partition}",
            )
        return check_leader_epoch(current_leader_epoch, self._leader_epoch, unset_allowed=False)

    def _update_high_watermark(self, log: LogView) -> HighWatermarkUpdate:
        previous = self._high_watermark
        if not self.high_watermark_held:  # one attribute on this hot path: judged when its inputs change
            leos = {**{r: p.log_end_offset for r, p in self._followers.items()}, self._broker_id: log.log_end_offset}
            self._high_watermark = leader_high_watermark(previous, self.maximal_isr, leos, self._epoch_start_offset)
        assert previous <= self._high_watermark <= log.log_end_offset, (previous, self._high_watermark)
        return HighWatermarkUpdate(previous, self._high_watermark)

    def _judge_min_isr(self) -> None:
        """`high_watermark_held`: the committed ISR is below min.insync.replicas (strict min ISR)."""
        self.high_watermark_held = held_below_min_isr(len(self._isr), self._min_insync_replicas, len(self._replicas))

    def _maybe_expand_isr(self, replica_id: int, now_ms: int) -> AlterPartitionProposal | None:
        if self._pending is not None or replica_id in self._isr:
            return None
        if self._ineligible is not None and not self._ineligible.may_propose(replica_id, now_ms):
            return None
        if not may_rejoin_isr(
            self._followers[replica_id],
            high_watermark=self._high_watermark,
            epoch_start_offset=self._epoch_start_offset,
        ):
            return None
        return self._propose(set(self._isr) | {replica_id}, IsrChangeKind.EXPAND)

    def _clear_pending(self) -> None:
        self._pending = None
        self._awaiting_new_state = False

    def _propose(self, new_isr: set[int], kind: IsrChangeKind) -> AlterPartitionProposal:
        assert self._broker_id in new_isr
        ordered = in_assignment_order(new_isr, self._replicas)
        self._pending = AlterPartitionProposal(
            topic_partition=self._topic_partition,
            leader_epoch=self._leader_epoch,
            new_isr=ordered,
            partition_epoch=self._partition_epoch,
            kind=kind,
            # a member joining is named with the broker epoch of the fetch that just caught it up (KIP-903)
            new_isr_broker_epochs=tuple(self._follower_broker_epochs.get(member, 0) for member in ordered),
        )
        return self._pending

    def _set_membership(self, replicas: tuple[int, ...], isr: tuple[int, ...], *, now_ms: int) -> None:
        assert self._broker_id in isr, (self._broker_id, isr)
        if replicas == self._replicas:
            # ISR only (a dead follower leaving): followers all tracked; in_assignment_order checks the ISR
            self._isr = in_assignment_order(isr, self._replicas)
            self._judge_min_isr()
            return
        assert set(isr) <= set(replicas), (isr, replicas)
        self._replicas = tuple(replicas)
        self._isr = in_assignment_order(isr, self._replicas)
        kept = {r: p for r, p in self._followers.items() if r in self._replicas}
        self._accepted_position = {r: pos for r, pos in self._accepted_position.items() if r in kept}
        self._follower_broker_epochs = {r: e for r, e in self._follower_broker_epochs.items() if r in kept}
        for replica_id in self._replicas:
            if replica_id != self._broker_id and replica_id not in kept:
                in_isr = replica_id in self._isr
                kept[replica_id] = FollowerProgress.in_sync_since(now_ms) if in_isr else FollowerProgress()
        self._followers = kept
        self._judge_min_isr()
