"""One hosted replica: the single place its state changes (TigerBeetle: centralise state changes).

Theory of operation (docs/architecture.md, "Data flow"; seed ReplicaManager):

`PartitionReplica` ties together the pieces the adapter would otherwise have to
keep consistent by hand:
- the controller's decision state (`PartitionState`, partition.py),
- the leader state (`LeaderReplica`, leader.py) while this broker leads,
- the replica's high watermark in either role (the leader's lives in
  `LeaderReplica`; a follower's here, and it seeds the next leadership).

It applies LeaderAndIsr / StopReplica outcomes (creating, updating or dropping
the `LeaderReplica`), keeps the ISR and partition epoch of `PartitionState` in
step with accepted AlterPartition answers, and routes fetches and produces to
the role that may serve them. It performs no I/O: outcomes still carry the
effects (StopFetcher, StartFetcher, AssignLeaderEpochStart, ...) for the
adapter, which owns the log, fetchers and purgatories.

A STOPPED replica is dropped by the adapter; a later assignment starts a new
`PartitionReplica`.
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.effects import NO_EFFECTS, STATE_CHANGED, Effects, after_append, after_isr_change
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import check_leader_epoch
from replog.broker.core.fetch.fetch import ConsumerRead, plan_consumer_fetch
from replog.broker.core.follower import follower_high_watermark
from replog.broker.core.fetch.follower_fetch import FollowerFetchResult
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate
from replog.broker.core.isr.isr_answer import AlterPartitionOutcome, AnswerIgnored, IsrCommitted, IsrRefreshed
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.broker.core.leader import LeaderReplica
from replog.broker.core.log_view import NO_LEADER_EPOCH, EpochEndOffset, LogView
from replog.broker.core.partition import (
    Applied,
    ChangeKind,
    LeaderAndIsrDecision,
    PartitionOutcome,
    PartitionState,
    ReplicaRole,
    apply_leader_and_isr,
    apply_stop_replica,
)
from replog.broker.core.produce.produce import ProduceAdmitted, ProduceProgress, admit_produce
from replog.common.core.partitions import TopicPartition


class LeaderAndIsrStep(NamedTuple):
    """A LeaderAndIsr decision applied: the outcome, the leader's HW change for an update at its own
    leader epoch (None otherwise), and what changed for waiting requests."""

    outcome: PartitionOutcome
    high_watermark_update: HighWatermarkUpdate | None
    effects: Effects


class LeaderAppended(NamedTuple):
    high_watermark_update: HighWatermarkUpdate
    effects: Effects


class PartitionReplica:
    def __init__(self, topic_partition: TopicPartition, broker_id: int, *, high_watermark: int = 0) -> None:
        """`high_watermark`: the checkpointed HW (clamped to the LEO on first use)."""
        self._state = PartitionState.new(topic_partition, broker_id)
        self._leader: LeaderReplica | None = None
        self._high_watermark = high_watermark
        # The first leader epoch of this broker's current unbroken leadership (-1 while not leading): a
        # same-leader epoch bump keeps it, so acks=all writes appended before the bump keep waiting.
        self._leading_since_epoch = NO_LEADER_EPOCH

    @property
    def state(self) -> PartitionState:
        return self._state

    @property
    def leader(self) -> LeaderReplica | None:
        return self._leader

    @property
    def high_watermark(self) -> int:
        return self._leader.high_watermark if self._leader is not None else self._high_watermark

    # --- controller requests -------------------------------------------------

    def on_leader_and_isr(self, decision: LeaderAndIsrDecision, *, log: LogView, now_ms: int,
                          min_insync_replicas: int = 1) -> PartitionOutcome:
        return self.leader_and_isr_step(decision, log=log, now_ms=now_ms,
                                        min_insync_replicas=min_insync_replicas).outcome

    def leader_and_isr_step(self, decision: LeaderAndIsrDecision, *, log: LogView, now_ms: int,
                            min_insync_replicas: int = 1) -> LeaderAndIsrStep:
        """`on_leader_and_isr`, with its effects: an update at the leader's own epoch changes its ISR (and
        the assignment, perhaps); anything else applied changes the replica's state. `min_insync_replicas`
        is the topic's, for a leadership this decision starts (strict min ISR, core/isr/high_watermark.py)."""
        leader_before = self._leader
        replicas_before = None if leader_before is None else leader_before.replicas
        high_watermark_before = self.high_watermark
        held = self._state.leader_epoch
        outcome = apply_leader_and_isr(self._state, decision,
                                       log_leader_epoch=log.latest_epoch() if held == NO_LEADER_EPOCH else held)
        if not isinstance(outcome, Applied):
            return LeaderAndIsrStep(outcome, None, NO_EFFECTS)
        self._apply(outcome, log=log, now_ms=now_ms, min_insync_replicas=min_insync_replicas)
        leader = self._leader
        if leader is None or leader is not leader_before:
            return LeaderAndIsrStep(outcome, None, STATE_CHANGED)
        update = HighWatermarkUpdate(high_watermark_before, leader.high_watermark)
        effects = after_isr_change(isr=leader.isr, hw_advanced=update.advanced, proposal_settled=False)
        if leader.replicas != replicas_before:
            effects = effects.with_state_changed()
        return LeaderAndIsrStep(outcome, update, effects)

    def on_stop_replica(self, *, leader_epoch: int, delete: bool) -> PartitionOutcome:
        outcome = apply_stop_replica(self._state, leader_epoch, delete)
        if isinstance(outcome, Applied):
            self._leave_leadership()
            self._state = outcome.state
        return outcome

    def on_alter_partition_answer(
        self, proposal: AlterPartitionProposal, answer: AlterPartitionAnswer, *, log: LogView
    ) -> AlterPartitionOutcome:
        """The controller answered `proposal` (see `LeaderReplica.on_alter_partition_answer`)."""
        if self._leader is None or self._leader.leader_epoch != proposal.leader_epoch:
            return AnswerIgnored("not the leader that proposed it")
        outcome = self._leader.on_alter_partition_answer(proposal, answer, log)
        if isinstance(outcome, IsrCommitted | IsrRefreshed):
            self._state = self._state._replace(isr=outcome.isr, partition_epoch=outcome.partition_epoch)
        return outcome

    # --- as leader -------------------------------------------------------------

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
        if self._leader is None:
            return self._not_leader(current_leader_epoch)
        return self._leader.on_follower_fetch(
            replica_id=replica_id,
            current_leader_epoch=current_leader_epoch,
            fetch_offset=fetch_offset,
            last_fetched_epoch=last_fetched_epoch,
            replica_broker_epoch=replica_broker_epoch,
            now_ms=now_ms,
            log=log,
        )

    def offset_for_leader_epoch(
        self, *, current_leader_epoch: int, requested_leader_epoch: int, log: LogView
    ) -> EpochEndOffset | Refusal:
        if self._leader is None:
            return self._not_leader(current_leader_epoch)
        return self._leader.offset_for_leader_epoch(
            current_leader_epoch=current_leader_epoch, requested_leader_epoch=requested_leader_epoch, log=log
        )

    def on_leader_append(self, *, log: LogView, appended_from: int, now_ms: int) -> LeaderAppended:
        """After the adapter appended at `appended_from` (the LEO before): the HW moves at once if the ISR is
        only us, and followers that held the whole log were caught up until `now_ms` (monotonic)."""
        assert self._leader is not None, "only a leader appends a producer's batches"
        update = self._leader.on_local_append(log, appended_from=appended_from, now_ms=now_ms)
        return LeaderAppended(update, after_append(update.advanced))

    def on_min_insync_replicas(self, value: int, *, log: LogView) -> tuple[HighWatermarkUpdate | None, Effects]:
        """The topic's min.insync.replicas changed. A leader's HW may be released (or held from now on),
        so waiting produces are judged again as after an ISR change."""
        if self._leader is None:
            return None, NO_EFFECTS
        update = self._leader.set_min_insync_replicas(value, log)
        return update, after_isr_change(isr=self._leader.isr, hw_advanced=update.advanced, proposal_settled=False)

    def admit_produce(self, *, acks: int, min_insync_replicas: int) -> ProduceAdmitted | Refusal:
        return admit_produce(
            acks=acks,
            is_leader=self._leader is not None,
            isr_size=len(self._state.isr),
            min_insync_replicas=min_insync_replicas,
        )

    def produce_progress(self) -> ProduceProgress:
        return ProduceProgress(
            is_leader=self._leader is not None,
            leader_epoch=self._state.leader_epoch,
            high_watermark=self.high_watermark,
            isr_size=len(self._state.isr),
            leading_since_epoch=self._leading_since_epoch,
            high_watermark_held=self._leader is not None and self._leader.high_watermark_held,
        )

    def plan_consumer_fetch(
        self, *, current_leader_epoch: int, fetch_offset: int, log: LogView
    ) -> ConsumerRead | Refusal:
        return plan_consumer_fetch(
            is_leader=self._leader is not None,
            leader_epoch=self._state.leader_epoch,
            current_leader_epoch=current_leader_epoch,
            fetch_offset=fetch_offset,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            high_watermark=self.high_watermark,
        )

    # --- as follower -------------------------------------------------------------

    def on_fetch_response(self, *, leader_high_watermark: int, log: LogView) -> int:
        """After appending a consistent fetch response's records: the follower's new HW."""
        assert self._leader is None, "a leader does not take fetch responses"
        self._high_watermark = follower_high_watermark(
            current=self._high_watermark, leader_high_watermark=leader_high_watermark, log_end_offset=log.log_end_offset
        )
        return self._high_watermark

    def on_truncated(self, *, log: LogView) -> int:
        """After the adapter truncated the log: the HW never exceeds the LEO."""
        assert self._leader is None, "a leader never truncates"
        self._high_watermark = min(self._high_watermark, log.log_end_offset)
        return self._high_watermark

    # --- internals -----------------------------------------------------------------

    def _apply(self, outcome: Applied, *, log: LogView, now_ms: int, min_insync_replicas: int) -> None:
        state = outcome.state
        if outcome.change is ChangeKind.ISR_UPDATE:
            if self._leader is not None:
                self._leader.apply_committed_state(
                    replicas=state.replicas, isr=state.isr, partition_epoch=state.partition_epoch, log=log, now_ms=now_ms
                )
        else:
            leading_since_epoch = self._leading_since_epoch if self._leader is not None else state.leader_epoch
            self._leave_leadership()
            if outcome.change is ChangeKind.BECOME_LEADER:
                self._leading_since_epoch = leading_since_epoch
                self._leader = LeaderReplica.start(
                    topic_partition=state.topic_partition,
                    broker_id=state.broker_id,
                    leader_epoch=state.leader_epoch,
                    replicas=state.replicas,
                    isr=state.isr,
                    partition_epoch=state.partition_epoch,
                    high_watermark=self._high_watermark,
                    log=log,
                    now_ms=now_ms,
                    min_insync_replicas=min_insync_replicas,
                )
        self._state = state
        assert (self._leader is not None) == (self._state.role is ReplicaRole.LEADER)

    def _leave_leadership(self) -> None:
        if self._leader is not None:
            self._high_watermark = self._leader.high_watermark
            self._leader = None
            self._leading_since_epoch = NO_LEADER_EPOCH

    def _not_leader(self, current_leader_epoch: int) -> Refusal:
        fenced = check_leader_epoch(current_leader_epoch, self._state.leader_epoch, unset_allowed=True)
        return fenced if fenced is not None else Refusal(ErrorCode.NOT_LEADER, "this broker does not lead the partition")
