"""A simulated 3-broker cluster around the broker cores, for scenario tests.

One partition, replicas (1, 2, 3): a `SimController` and three `SimBroker`s
(sim_members.py), driven by explicit steps. A produce, a follower's fetch, the
follower's append and its truncation run the broker's own partition steps
(core/leader_steps.py, core/follower_steps.py) on each broker's fake log, so
their order is the broker's; the cluster delivers the answers and keeps the truth.

Nothing happens by itself: time moves with the `ManualClock`, controller
messages wait in per-broker inboxes until delivered, AlterPartition requests
and answers wait in queues. Tests and the random schedule decide the order.

`SimCluster` also keeps the *truth* the invariants are checked against:
- `committed`: offset -> record, filled whenever a leader's HW advances;
- `acked`: records acknowledged to an acks=-1 producer;
- leaders seen per leader epoch, and the highest HW ever published.
`check_invariants()` (sim_invariants.py) raises AssertionError naming what broke.
"""

from __future__ import annotations

from collections import deque

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.follower import FetchPosition, fetch_position
from replog.broker.core.follower_steps import append_from_leader, truncate_diverging
from replog.broker.core.high_watermark import HighWatermarkUpdate
from replog.broker.core.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.broker.core.leader_steps import FollowerFetchAnswer, answer_follower_fetch
from replog.broker.core.leader_steps import append_as_leader as leader_append
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.partition import Applied, AssignLeaderEpochStart, CompleteDelayedOperations, ReplicaRole
from replog.broker.core.produce import DelayedProduce, ProduceWait
from replog.broker.core.producer_state import rebuild_producer_state
from replog.broker.core.purgatory import AddOutcome, Purgatory
from replog.broker.core.replica import PartitionReplica
from replog.common.clock import ManualClock
from tests.scenario.broker.sim_invariants import check_invariants
from tests.scenario.broker.sim_members import (
    FETCH_RECORDS_MAX,
    MIN_INSYNC_REPLICAS,
    PRODUCE_TIMEOUT_MS,
    REPLICA_LAG_TIME_MAX_MS,
    REPLICAS,
    TP,
    ProduceTicket,
    SimBroker,
    SimController,
)
from tests.unit.broker.core.fake_log import FakeBatchHeader, FakeLog, FakeRecord


class SimCluster:
    def __init__(self, clock: ManualClock | None = None, *, assign_epoch_on_leadership: bool = True) -> None:
        """`assign_epoch_on_leadership`: apply AssignLeaderEpochStart to the log's epoch cache; False
        behaves like a log that records an epoch only with its first batch (as PartitionLog does)."""
        self.clock = clock or ManualClock()
        self.assign_epoch_on_leadership = assign_epoch_on_leadership
        self.controller = SimController()
        self.brokers: dict[int, SimBroker] = {b: self._fresh_broker(b, FakeLog(), 0) for b in REPLICAS}
        # In flight: (broker id, registration epoch, proposal[, answer]).
        self.alter_requests: deque[tuple[int, int, AlterPartitionProposal]] = deque()
        self.alter_answers: deque[tuple[int, int, AlterPartitionProposal, AlterPartitionAnswer]] = deque()
        self.committed: dict[int, FakeRecord] = {}
        self.acked: list[ProduceTicket] = []
        self.leaders_by_epoch: dict[int, int] = {}
        self.published_hw_max = 0
        self.events: list[str] = []
        self.pending: list[ProduceTicket] = []  # acks=-1 tickets parked in some purgatory

    # --- set-up -----------------------------------------------------------------

    def start(self) -> None:
        """The controller elects the first leader and every broker hears about it."""
        self.controller.elect()
        self.broadcast()
        self.deliver_all()

    @property
    def now_ms(self) -> int:
        return self.clock.monotonic_ms()

    def broker(self, broker_id: int) -> SimBroker:
        return self.brokers[broker_id]

    def leader(self) -> SimBroker:
        """The broker the controller has elected (tests use it once decisions are delivered)."""
        return self.brokers[self.controller.leader]

    # --- controller -> brokers -------------------------------------------------------

    def broadcast(self) -> None:
        decision = self.controller.decision()
        for broker in self.brokers.values():
            if broker.alive and not broker.isolated:
                broker.inbox.append(decision)

    def deliver(self, broker_id: int) -> bool:
        broker = self.brokers[broker_id]
        if not broker.alive or not broker.inbox:
            return False
        decision = broker.inbox.popleft()
        hw_before = broker.replica.high_watermark
        outcome = broker.replica.on_leader_and_isr(decision, log=broker.log, now_ms=self.now_ms)
        if isinstance(outcome, Applied):
            if broker.replica.leader is not None:
                # An ISR update at our epoch may commit more, and so may taking over with an ISR of only
                # ourselves (the adapter sees CompleteDelayedOperations, or the state change).
                self._after_leader_hw(broker, HighWatermarkUpdate(hw_before, broker.replica.high_watermark))
            self._run_effects(broker, outcome)
        return True

    def deliver_all(self) -> None:
        while any(self.deliver(b) for b in REPLICAS):
            pass

    def _run_effects(self, broker: SimBroker, outcome: Applied) -> None:
        self.events.append(f"broker {broker.broker_id}: {outcome.change.name} epoch {outcome.state.leader_epoch}")
        for effect in outcome.effects:
            if isinstance(effect, AssignLeaderEpochStart) and self.assign_epoch_on_leadership:
                broker.log.assign_epoch(effect.leader_epoch)
            elif isinstance(effect, CompleteDelayedOperations):
                self._complete_delayed(broker)
            # StopFetcher / StartFetcher: fetching here is driven by `fetch()`, from the state's leader.
        if broker.role is ReplicaRole.LEADER:
            self.note_leader(broker)

    # --- clients ------------------------------------------------------------------------

    def produce(
        self, payload: str, *, acks: int = -1, broker_id: int | None = None, producer_id: int = -1, sequence: int = -1
    ) -> ProduceTicket:
        target = self.brokers[self.controller.leader if broker_id is None else broker_id]
        ticket = ProduceTicket(payload, acks, target.broker_id, producer_id=producer_id, sequence=sequence)
        if not target.alive:
            ticket.error_code = ErrorCode.BROKER_NOT_AVAILABLE
            return ticket
        appended, _ = leader_append(
            target, acks=acks, min_insync_replicas=MIN_INSYNC_REPLICAS, batch=payload,
            header=FakeBatchHeader(producer_id, 0, sequence), fsync=False, now_ms=self.now_ms,
        )
        if appended.error_code is not ErrorCode.NONE:
            ticket.error_code = appended.error_code
            return ticket
        ticket.base_offset = appended.base_offset
        if appended.high_watermark_update is not None:
            self._after_leader_hw(target, appended.high_watermark_update)
        if acks != -1:
            ticket.error_code = ErrorCode.NONE
            return ticket
        self._wait_for_replication(target, ticket)
        return ticket

    def _wait_for_replication(self, broker: SimBroker, ticket: ProduceTicket) -> None:
        wait = ProduceWait(TP, broker.leader_epoch, ticket.base_offset, ticket.base_offset, MIN_INSYNC_REPLICAS)
        op = DelayedProduce([wait], lambda _tp: broker.replica.produce_progress())
        ticket.op = op
        outcome = broker.purgatory.add(op, op.keys, self.now_ms + PRODUCE_TIMEOUT_MS)
        assert outcome is not AddOutcome.PURGATORY_FULL
        if outcome is AddOutcome.COMPLETED_AT_ONCE:
            self._resolve(ticket)
        else:
            self.pending.append(ticket)

    def _resolve(self, ticket: ProduceTicket) -> None:
        assert ticket.op is not None and ticket.op.is_done
        (result,) = ticket.op.results
        ticket.error_code = result.error_code
        if ticket.ok:
            self.acked.append(ticket)

    def _complete_delayed(self, broker: SimBroker) -> None:
        self._resolve_ops(broker.purgatory.check(TP))

    def _resolve_ops(self, ops: list[DelayedProduce]) -> None:
        for op in ops:
            self._resolve(next(t for t in self.pending if t.op is op))
        self.pending = [t for t in self.pending if not t.done]

    # --- replication ----------------------------------------------------------------------

    def fetch(self, follower_id: int) -> str:
        """One ReplicaFetch round trip from `follower_id` to the leader it follows."""
        follower = self.brokers[follower_id]
        if not follower.alive or follower.role is not ReplicaRole.FOLLOWER:
            return "not following"
        leader = self.brokers[follower.replica.state.leader_id]
        if not leader.alive:
            return "leader unreachable"
        position = fetch_position(follower.log)
        answer, _ = answer_follower_fetch(
            leader.replica,
            leader.log,
            replica_id=follower_id,
            current_leader_epoch=follower.leader_epoch,
            fetch_offset=position.fetch_offset,
            last_fetched_epoch=position.last_fetched_epoch,
            bytes_max=FETCH_RECORDS_MAX,
            now_ms=self.now_ms,
        )
        if answer.error_code is not ErrorCode.NONE:
            return answer.error_code.name
        if answer.diverging is not None:
            offset = self._truncate(follower, position, answer.diverging)
            return f"truncated to {offset}"
        return self._take_records(follower, leader, position, answer)

    def _take_records(
        self, follower: SimBroker, leader: SimBroker, position: FetchPosition, answer: FollowerFetchAnswer
    ) -> str:
        appended, _ = append_from_leader(
            follower, leader_epoch=follower.leader_epoch, fetch_offset=position.fetch_offset, records=answer.records,
            leader_high_watermark=answer.high_watermark,
        )
        assert appended is not None, "the follower's step runs right after its fetch: nothing raced with it"
        self._after_leader_hw(leader, answer.high_watermark_update)
        if answer.isr_proposal is not None:
            self._send_alter_partition(leader, answer.isr_proposal)
        return f"fetched {len(answer.records)}"

    def _truncate(self, broker: SimBroker, position: FetchPosition, diverging: EpochEndOffset) -> int:
        log = broker.log
        held = log.records_between(log.log_start_offset, log.log_end_offset)
        truncated, _ = truncate_diverging(
            broker, leader_epoch=broker.leader_epoch, fetch_offset=position.fetch_offset,
            last_fetched_epoch=position.last_fetched_epoch, diverging=diverging,
        )
        assert truncated is not None and not isinstance(truncated, Refusal), truncated
        offset = truncated.log_end_offset_after
        for removed in held[offset - log.log_start_offset :]:
            kept = self.committed.get(removed.offset)
            assert kept != removed, f"broker {broker.broker_id} truncated committed record {removed}"
        self.events.append(f"broker {broker.broker_id}: truncated to {offset}")
        return offset

    def _after_leader_hw(self, leader: SimBroker, update: HighWatermarkUpdate) -> None:
        if not update.advanced:
            return
        assert update.current >= self.published_hw_max, (
            f"broker {leader.broker_id} published HW {update.current} below earlier {self.published_hw_max}"
        )
        self.published_hw_max = update.current
        for record in leader.log.records_between(update.previous, update.current):
            earlier = self.committed.setdefault(record.offset, record)
            assert earlier == record, f"offset {record.offset} committed twice: {earlier} then {record}"
        self._complete_delayed(leader)

    # --- ISR changes ----------------------------------------------------------------------

    def check_isr(self, broker_id: int) -> AlterPartitionProposal | None:
        """The leader's periodic ISR check (Kafka's isr-expiration task)."""
        broker = self.brokers[broker_id]
        if not broker.alive or broker.replica.leader is None:
            return None
        proposal = broker.replica.leader.maybe_shrink_isr(
            now_ms=self.now_ms, replica_lag_time_max_ms=REPLICA_LAG_TIME_MAX_MS, log=broker.log
        )
        if proposal is not None:
            self._send_alter_partition(broker, proposal)
        return proposal

    def last_proposal(self) -> AlterPartitionProposal:
        return self.alter_requests[-1][2]

    def _send_alter_partition(self, broker: SimBroker, proposal: AlterPartitionProposal) -> None:
        self.alter_requests.append((broker.broker_id, broker.broker_epoch, proposal))

    def resend_pending_proposals(self) -> None:
        """The adapters' retry: a proposal with no request or answer in flight is sent again, unchanged."""
        in_flight = {(b, p) for b, _, p in self.alter_requests} | {(b, p) for b, _, p, _ in self.alter_answers}
        for broker in self.brokers.values():
            leader = broker.replica.leader if broker.alive else None
            if leader is not None and leader.proposal_to_resend is not None:
                if (broker.broker_id, leader.proposal_to_resend) not in in_flight:
                    self._send_alter_partition(broker, leader.proposal_to_resend)

    def deliver_alter_request(self) -> bool:
        if not self.alter_requests:
            return False
        broker_id, broker_epoch, proposal = self.alter_requests.popleft()
        if self.brokers[broker_id].isolated:
            return True  # never reaches the controller; the sender retries later
        answer = self.controller.alter_partition(broker_id, broker_epoch, proposal)
        if answer is not None:
            self.alter_answers.append((broker_id, broker_epoch, proposal, answer))
        return True

    def deliver_alter_answer(self, *, lose: bool = False) -> bool:
        """Deliver the next answer; `lose` models an RPC that timed out after the controller wrote."""
        if not self.alter_answers:
            return False
        broker_id, broker_epoch, proposal, answer = self.alter_answers.popleft()
        broker = self.brokers[broker_id]
        if lose or not broker.alive or broker.broker_epoch != broker_epoch:
            return True  # the answer never arrives (or its incarnation is gone); the proposal stays pending
        outcome = broker.replica.on_alter_partition_answer(proposal, answer, log=broker.log)
        self.events.append(f"broker {broker_id}: AlterPartition {type(outcome).__name__}")
        hw_update = getattr(outcome, "high_watermark_update", None)
        if hw_update is not None:
            self._after_leader_hw(broker, hw_update)
        return True

    def settle_alter_partition(self, rounds: int = 5) -> None:
        for _ in range(rounds):
            self.resend_pending_proposals()
            while self.deliver_alter_request() or self.deliver_alter_answer():
                pass

    # --- time and failures -------------------------------------------------------------------

    def tick(self, delta_ms: int) -> None:
        self.clock.advance(delta_ms)
        for broker in self.brokers.values():
            if broker.alive:
                self._resolve_ops(broker.purgatory.expire(self.now_ms))

    def kill(self, broker_id: int) -> None:
        """Crash: memory is gone, the (fsynced) log stays; the controller notices."""
        broker = self.brokers[broker_id]
        assert broker.alive
        broker.alive = False
        broker.inbox.clear()
        for ticket in self.pending:
            if ticket.broker_id == broker_id:
                ticket.error_code = ErrorCode.REQUEST_TIMED_OUT  # the client's connection dropped
        self.pending = [t for t in self.pending if not t.done]
        self.events.append(f"broker {broker_id}: killed")
        if not broker.isolated:
            self.controller.broker_lost(broker_id)
            self.broadcast()

    def restart(self, broker_id: int, *, checkpoint_hw: int | None = None) -> None:
        """A killed broker starts again from its log and checkpointed HW and registers.

        `checkpoint_hw`: what its HW checkpoint file says (checkpoints are periodic, so it
        may lag); by default the HW it had when it died.
        """
        old = self.brokers[broker_id]
        assert not old.alive
        hw = old.replica.high_watermark if checkpoint_hw is None else checkpoint_hw
        self.brokers[broker_id] = self._fresh_broker(broker_id, old.log, hw)
        self.events.append(f"broker {broker_id}: restarted")
        self.controller.broker_back(broker_id)
        self.brokers[broker_id].broker_epoch = self.controller.broker_epochs[broker_id]
        self.broadcast()

    def bounce(self, broker_id: int, *, checkpoint_hw: int | None = None) -> None:
        """A restart faster than the controller's session timeout: the ISR keeps the broker."""
        old = self.brokers[broker_id]
        assert old.alive
        hw = old.replica.high_watermark if checkpoint_hw is None else checkpoint_hw
        self.brokers[broker_id] = self._fresh_broker(broker_id, old.log, hw)
        self.events.append(f"broker {broker_id}: bounced")
        self.brokers[broker_id].broker_epoch = self.controller.register(broker_id)
        self.brokers[broker_id].inbox.append(self.controller.decision())  # answer to its re-registration

    def isolate(self, broker_id: int) -> None:
        """Cut the broker off from the controller (session expiry); it keeps running."""
        broker = self.brokers[broker_id]
        broker.isolated = True
        broker.inbox.clear()
        self.events.append(f"broker {broker_id}: isolated")
        self.controller.broker_lost(broker_id)
        self.broadcast()

    def heal(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        broker.isolated = False
        self.events.append(f"broker {broker_id}: healed")
        self.controller.broker_back(broker_id)
        broker.broker_epoch = self.controller.broker_epochs[broker_id]
        self.broadcast()

    def _fresh_broker(self, broker_id: int, log: FakeLog, checkpoint_hw: int) -> SimBroker:
        return SimBroker(
            broker_id=broker_id,
            log=log,
            replica=PartitionReplica(TP, broker_id, high_watermark=checkpoint_hw),
            producer_state=rebuild_producer_state(log.headers()),
            purgatory=Purgatory(operations_max=1_000),
        )

    # --- invariants ------------------------------------------------------------------------------

    def note_leader(self, broker: SimBroker) -> None:
        holder = self.leaders_by_epoch.setdefault(broker.leader_epoch, broker.broker_id)
        assert holder == broker.broker_id, f"leader epoch {broker.leader_epoch} led by {holder} and {broker.broker_id}"

    def check_invariants(self) -> None:
        check_invariants(self)

    def logs(self) -> dict[int, list[str]]:
        return {b: broker.log.payloads() for b, broker in self.brokers.items()}
