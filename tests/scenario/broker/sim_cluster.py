"""A simulated 3-broker cluster around the broker cores, for scenario tests.

One partition, replicas (1, 2, 3): a `SimController` and three `SimBroker`s
(sim_members.py), driven by explicit steps. A produce, a follower's fetch, the
follower's append and its truncation run the broker's own partition steps
(core/leader_steps.py, core/follower_steps.py) on each broker's fake log, so
their order is the broker's; the cluster delivers the answers and keeps the truth.

Nothing happens by itself: time moves with the `ManualClock`, controller
messages wait in per-broker inboxes until delivered, AlterPartition requests
and answers wait in queues. Tests and the random schedule decide the order.

Given a `SimNetwork` (sim_network.py), every message goes over it instead: a
follower's fetch is a request to its leader and an answer back, the
controller's LeaderAndIsr and AlterPartition answers and the brokers'
AlterPartition requests travel as messages, and so does the answer to every
produce; the network delays, drops, duplicates and reorders them and cuts
links. `deliver_network()` hands out the next one. A follower reads only the answer to
its latest fetch, as the broker's fetcher reads only its own gRPC call's answer. With `strict_min_isr` the
leaders enforce min.insync.replicas on their HW (KIP-966) and the controller
keeps eligible leader replicas and elects from them; with `durable` every
append is fsynced (the broker's durable mode) and `kill`/`bounce` may lose power,
losing what a log held unsynced, whole or torn (a prefix of it survives). A disk armed with
`fail_next_fsync` fails its next append's fsync: the leader answers that produce with the broker's
storage error, the follower drops the fetch answer, the log directory goes offline and the broker
halts (`halt`: its ZooKeeper session ended first, then gone as a power loss would leave it).

`SimCluster` also keeps the *truth* the invariants are checked against:
- `committed`: offset -> record, filled whenever a leader's HW advances;
- `acked`: records acknowledged to an acks=-1 producer;
- leaders seen per leader epoch, and the highest HW published in each leader epoch.
`check_invariants()` (sim_invariants.py) raises AssertionError naming what broke.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.follower import FetchPosition, fetch_position
from replog.broker.core.follower_steps import append_from_leader, truncate_diverging
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.broker.core.leader_steps import FollowerFetchAnswer, answer_follower_fetch
from replog.broker.core.leader_steps import append_as_leader as leader_append
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.partition import (
    Applied,
    AssignLeaderEpochStart,
    LeaderAndIsrDecision,
    ReplicaRole,
)
from replog.broker.core.produce.produce import DelayedProduce, ProduceWait
from replog.broker.core.produce.producer_state import rebuild_producer_state
from replog.broker.core.produce.purgatory import AddOutcome, Purgatory
from replog.broker.core.replica import PartitionReplica
from replog.broker.replicas.follower_side import follower_append_failed
from replog.broker.replicas.leader_side import storage_failure_answer
from replog.common.clock import ManualClock
from tests.scenario.broker.sim_invariants import TruthChecked, check_invariants
from tests.scenario.broker.sim_members import (
    FETCH_RECORDS_MAX,
    MIN_INSYNC_REPLICAS,
    PRODUCE_TIMEOUT_MS,
    REPLICA_LAG_TIME_MAX_MS,
    REPLICAS,
    TP,
    DiskLog,
    ProduceTicket,
    SimBroker,
    SimController,
)
from tests.scenario.broker.sim_network import CLIENT, CONTROLLER, Message, SimNetwork
from tests.scenario.broker.sim_producer import Delivery
from tests.unit.broker.core.fake_log import FakeBatchHeader, FakeLog, FakeRecord


class FetchRequest(NamedTuple):
    follower_id: int
    follower_incarnation: int
    follower_broker_epoch: int  # its registration when it sent the fetch, as the broker's fetcher names it
    leader_epoch: int
    position: FetchPosition


class FetchAnswer(NamedTuple):
    request: FetchRequest
    answer: FollowerFetchAnswer


class AlterRequest(NamedTuple):
    broker_id: int
    broker_epoch: int
    proposal: AlterPartitionProposal


class AlterAnswer(NamedTuple):
    broker_epoch: int
    proposal: AlterPartitionProposal
    answer: AlterPartitionAnswer


class ProduceAnswer(NamedTuple):
    ticket: ProduceTicket
    error_code: ErrorCode


class SimCounts(NamedTuple):
    """What a run went through, beyond the network's own counts."""

    crashes: int
    power_losses: int
    stale_checkpoints: int
    records_lost_unsynced: int
    isolations: int  # brokers the controller declared lost while they kept running (a stubbed session expiry)
    torn_writes: int = 0  # power losses (or halts) after which part of the unsynced tail survived
    fsync_errors: int = 0  # appends whose fsync failed, each followed by its broker's halt


class SimCluster:
    def __init__(
        self, clock: ManualClock | None = None, *, assign_epoch_on_leadership: bool = True,
        network: SimNetwork | None = None, strict_min_isr: bool = False, durable: bool = False,
    ) -> None:
        """`assign_epoch_on_leadership`: apply AssignLeaderEpochStart to the log's epoch cache; False
        behaves like a log that records an epoch only with its first batch (as PartitionLog does)."""
        self.clock = clock or ManualClock()
        self.assign_epoch_on_leadership = assign_epoch_on_leadership
        self.network = network
        self.leader_min_insync_replicas = MIN_INSYNC_REPLICAS if strict_min_isr else 1
        self.fsync = durable
        self.controller = SimController(elr=strict_min_isr)
        self.brokers: dict[int, SimBroker] = {b: self._fresh_broker(b, DiskLog(), 0) for b in REPLICAS}
        self.crashes = 0
        self.power_losses = 0
        self.stale_checkpoints = 0
        self.records_lost_unsynced = 0
        self.isolations = 0
        self.torn_writes = 0
        self.fsync_errors = 0
        # In flight: (broker id, registration epoch, proposal[, answer]).
        self.alter_requests: deque[tuple[int, int, AlterPartitionProposal]] = deque()
        self.alter_answers: deque[tuple[int, int, AlterPartitionProposal, AlterPartitionAnswer]] = deque()
        self.committed: dict[int, FakeRecord] = {}
        self.committed_end = 0  # one past the highest committed offset
        self.truth_checked = TruthChecked()
        self.acked: list[ProduceTicket] = []
        self.delivered: list[Delivery] = []  # records the client library reported written (sim_producer.py)
        self.leaders_by_epoch: dict[int, int] = {}
        self.published_hw_by_epoch: dict[int, int] = {}  # leader epoch -> the highest HW its leader published
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
        """The controller tells every broker it reaches its decision (also its periodic resync)."""
        for broker in self.brokers.values():
            if broker.alive and not broker.isolated:
                self._send_decision(broker)

    def _send_decision(self, broker: SimBroker) -> None:
        decision = self.controller.decision()
        if self.network is None:
            broker.inbox.append(decision)
        else:
            self._send(CONTROLLER, broker.broker_id, decision)

    def deliver(self, broker_id: int) -> bool:
        broker = self.brokers[broker_id]
        if not broker.alive or not broker.inbox:
            return False
        self._apply_decision(broker, broker.inbox.popleft())
        return True

    def _apply_decision(self, broker: SimBroker, decision) -> None:
        """The broker's LeaderAndIsr step (replicas/hosted_partition.py runs the same one), then its effects."""
        hw_before = broker.replica.high_watermark
        step = broker.replica.leader_and_isr_step(
            decision, log=broker.log, now_ms=self.now_ms, min_insync_replicas=self.leader_min_insync_replicas)
        if not isinstance(step.outcome, Applied):
            return
        update = step.high_watermark_update
        if update is None and broker.replica.leader is not None:
            # A leadership this decision started publishes its first HW (with an ISR of only itself, up to
            # its LEO): no step reports it as an update, but the truth must note what it commits.
            update = HighWatermarkUpdate(hw_before, broker.replica.high_watermark)
        if update is not None:
            self._note_published_hw(broker, update)
        self._run_effects(broker, step.outcome)
        if step.effects.completes_delayed_produces:  # as the broker's consequences.py does
            self._complete_delayed(broker)

    def deliver_all(self) -> None:
        if self.network is not None:
            self.drain_network()
        while any(self.deliver(b) for b in REPLICAS):
            pass

    # --- the network ----------------------------------------------------------------------

    def _send(self, src: int, dst: int, payload) -> bool:
        assert self.network is not None
        incarnation = self.brokers[dst].incarnation if dst in self.brokers else 0
        return self.network.send(src, dst, payload, incarnation=incarnation)

    def deliver_network(self) -> str | None:
        """Deliver the next due message (None when none is due)."""
        assert self.network is not None
        message = self.network.take()
        if message is None:
            return None
        return f"{message.src}->{message.dst} {type(message.payload).__name__}: {self._receive(message)}"

    def drain_network(self, rounds_max: int = 10_000) -> None:
        """Deliver everything in flight, moving the clock to each message's time (and what it causes)."""
        assert self.network is not None
        for _ in range(rounds_max):
            due_ms = self.network.next_due_ms()
            if due_ms is None:
                return
            if due_ms > self.now_ms:
                self.tick(due_ms - self.now_ms)
            self.deliver_network()
        raise AssertionError("the network never went quiet")

    def _receive(self, message: Message) -> str:
        payload = message.payload
        if isinstance(payload, ProduceAnswer):
            return self._client_receives(payload.ticket, payload.error_code)
        if isinstance(payload, AlterRequest):
            if self.brokers[payload.broker_id].isolated:
                return "lost (the sender is cut off from the controller)"
            answer = self.controller.alter_partition(payload.broker_id, payload.broker_epoch, payload.proposal)
            if answer is not None:
                self._send(CONTROLLER, payload.broker_id, AlterAnswer(payload.broker_epoch, payload.proposal, answer))
            return f"answered {None if answer is None else answer.error_code.name}"
        broker = self.brokers[message.dst]
        if not broker.alive or broker.incarnation != message.incarnation:
            return "lost (its receiver died)"
        if message.src == CONTROLLER and broker.isolated:
            return "lost (the receiver is cut off from the controller)"
        if isinstance(payload, LeaderAndIsrDecision):
            self._apply_decision(broker, payload)
            return f"leader {payload.leader_id} epoch {payload.leader_epoch}"
        if isinstance(payload, FetchRequest):
            answer = self._serve_fetch(broker, payload)
            self.network.send(broker.broker_id, payload.follower_id, FetchAnswer(payload, answer),
                              incarnation=payload.follower_incarnation)
            return f"fetch at {payload.position.fetch_offset} served: {answer.error_code.name}"
        if isinstance(payload, FetchAnswer):
            return self._take_fetch_answer(broker, payload.request, payload.answer)
        assert isinstance(payload, AlterAnswer), payload
        return self._take_alter_answer(broker, payload.broker_epoch, payload.proposal, payload.answer)

    def _run_effects(self, broker: SimBroker, outcome: Applied) -> None:
        self.events.append(f"broker {broker.broker_id}: {outcome.change.name} epoch {outcome.state.leader_epoch}")
        for effect in outcome.effects:
            if isinstance(effect, AssignLeaderEpochStart) and self.assign_epoch_on_leadership:
                broker.log.assign_epoch(effect.leader_epoch)
            # StopFetcher / StartFetcher: fetching here is driven by `fetch()`, from the state's leader.
            # CompleteDelayedOperations: the step's Effects say it (`_apply_decision`), as in the broker.
        if broker.role is ReplicaRole.LEADER:
            self.note_leader(broker)

    # --- clients ------------------------------------------------------------------------

    def produce(
        self, payload: str, *, acks: int = -1, broker_id: int | None = None, producer_id: int = -1, sequence: int = -1
    ) -> ProduceTicket:
        target = self.brokers[self.controller.leader if broker_id is None else broker_id]
        ticket = ProduceTicket(payload, acks, target.broker_id, producer_id=producer_id, sequence=sequence)
        if not target.alive:
            ticket.error_code = ticket.broker_code = ErrorCode.BROKER_NOT_AVAILABLE
            return ticket
        try:
            appended, _ = leader_append(
                target, acks=acks, min_insync_replicas=MIN_INSYNC_REPLICAS, batch=payload,
                header=FakeBatchHeader(producer_id, 0, sequence), fsync=self.fsync, now_ms=self.now_ms,
            )
        except OSError as exc:  # the disk refused it (sim_members.DiskLog): the broker's own answer
            appended = storage_failure_answer(target.dir_failures, TP, exc)
        if appended.error_code is not ErrorCode.NONE:
            self._answer_client(ticket, appended.error_code)
            self._halt_if_told(target)
            return ticket
        ticket.base_offset = appended.base_offset
        if appended.high_watermark_update is not None:
            self._after_leader_hw(target, appended.high_watermark_update)
        if acks != -1:
            self._answer_client(ticket, ErrorCode.NONE)
            return ticket
        self._wait_for_replication(target, ticket)
        return ticket

    def _answer_client(self, ticket: ProduceTicket, code: ErrorCode) -> None:
        """The broker answers a produce; over the network the client hears it later, or never (then it times out)."""
        ticket.broker_code = code
        if self.network is None:
            self._client_receives(ticket, code)
        elif not self._send(ticket.broker_id, CLIENT, ProduceAnswer(ticket, code)):
            ticket.error_code = ErrorCode.REQUEST_TIMED_OUT

    def _client_receives(self, ticket: ProduceTicket, code: ErrorCode) -> str:
        if ticket.error_code is not None:
            return "a repeated answer, ignored"
        ticket.error_code = code
        if ticket.ok and ticket.acks == -1:
            self.acked.append(ticket)
        return f"produce answer {code.name}"

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
        self._answer_client(ticket, result.error_code)

    def _complete_delayed(self, broker: SimBroker) -> None:
        self._resolve_ops(broker.purgatory.check(TP))

    def _resolve_ops(self, ops: list[DelayedProduce]) -> None:
        if not ops:
            return
        for op in ops:
            self._resolve(next(t for t in self.pending if t.op is op))
        self.pending = [t for t in self.pending if t.broker_code is None]

    # --- replication ----------------------------------------------------------------------

    def fetch(self, follower_id: int) -> str:
        """One ReplicaFetch from `follower_id` to the leader it follows: a round trip, or over the network a
        request whose answer comes back later (or never)."""
        follower = self.brokers[follower_id]
        if not follower.alive or follower.role is not ReplicaRole.FOLLOWER:
            return "not following"
        leader_id = follower.replica.state.leader_id
        request = FetchRequest(follower_id, follower.incarnation, follower.broker_epoch, follower.leader_epoch,
                               fetch_position(follower.log))
        if self.network is not None:
            follower.fetch_call = request  # a fetch still unanswered is abandoned (its call timed out)
            sent = self._send(follower_id, leader_id, request)
            return f"fetch at {request.position.fetch_offset} to {leader_id} {'sent' if sent else 'lost'}"
        leader = self.brokers[leader_id]
        if not leader.alive:
            return "leader unreachable"
        return self._take_fetch_answer(follower, request, self._serve_fetch(leader, request))

    def _serve_fetch(self, leader: SimBroker, request: FetchRequest) -> FollowerFetchAnswer:
        """The leader's side of a follower's fetch, with what it causes there (HW, ISR expansion)."""
        answer, _ = answer_follower_fetch(
            leader.replica,
            leader.log,
            replica_id=request.follower_id,
            current_leader_epoch=request.leader_epoch,
            fetch_offset=request.position.fetch_offset,
            last_fetched_epoch=request.position.last_fetched_epoch,
            replica_broker_epoch=request.follower_broker_epoch,
            bytes_max=FETCH_RECORDS_MAX,
            now_ms=self.now_ms,
        )
        if answer.high_watermark_update is not None:
            self._after_leader_hw(leader, answer.high_watermark_update)
        if answer.isr_proposal is not None:
            self._send_alter_partition(leader, answer.isr_proposal)
        return answer

    def _take_fetch_answer(self, follower: SimBroker, request: FetchRequest, answer: FollowerFetchAnswer) -> str:
        if self.network is not None:
            if follower.fetch_call is not request:
                return "answer to an abandoned call, dropped"
            follower.fetch_call = None
        if answer.error_code is not ErrorCode.NONE:
            return answer.error_code.name
        if answer.diverging is not None:
            offset = self._truncate(follower, request, answer.diverging)
            return "stale answer dropped" if offset is None else f"truncated to {offset}"
        try:
            appended, _ = append_from_leader(
                follower, leader_epoch=request.leader_epoch, fetch_offset=request.position.fetch_offset,
                records=answer.records, leader_high_watermark=answer.high_watermark, fsync=self.fsync,
            )
        except OSError as exc:  # the disk refused it (sim_members.DiskLog): as the broker's fetcher does
            follower_append_failed(follower.dir_failures, TP, exc)
            self._halt_if_told(follower)
            return f"append failed: {exc.strerror}"
        if appended is None:
            assert self.network is not None, "without a network the follower's step runs right after its fetch"
            return "stale answer dropped"
        return f"fetched {len(answer.records)}"

    def _truncate(self, broker: SimBroker, request: FetchRequest, diverging: EpochEndOffset) -> int | None:
        log = broker.log
        held = log.records_between(log.log_start_offset, log.log_end_offset)
        truncated, _ = truncate_diverging(
            broker, leader_epoch=request.leader_epoch, fetch_offset=request.position.fetch_offset,
            last_fetched_epoch=request.position.last_fetched_epoch, diverging=diverging,
        )
        if truncated is None:
            assert self.network is not None, "without a network the follower's step runs right after its fetch"
            return None
        assert not isinstance(truncated, Refusal), truncated
        offset = truncated.log_end_offset_after
        for removed in held[offset - log.log_start_offset :]:
            kept = self.committed.get(removed.offset)
            assert kept != removed, f"broker {broker.broker_id} truncated committed record {removed}"
        self.events.append(f"broker {broker.broker_id}: truncated to {offset}")
        return offset

    def _after_leader_hw(self, leader: SimBroker, update: HighWatermarkUpdate) -> None:
        """A leader's step moved its HW: the truth notes it, and produces waiting on it may complete."""
        if update.advanced:
            self._note_published_hw(leader, update)
            self._complete_delayed(leader)

    def _note_published_hw(self, leader: SimBroker, update: HighWatermarkUpdate) -> None:
        """The truth: what a leader's HW published is committed, and no HW goes back (see below)."""
        if not update.advanced:
            return
        # Monotonic for the leaders of this epoch and every older one. A zombie leader of an older epoch may
        # still advance (a late fetch its follower sent before moving on), below what newer leaders published:
        # the records are committed all the same (checked below); clients fence it by leader epoch (KIP-320).
        leader_epoch = leader.leader_epoch
        floor = max((hw for epoch, hw in self.published_hw_by_epoch.items() if epoch <= leader_epoch), default=0)
        assert update.current >= floor, (
            f"broker {leader.broker_id} published HW {update.current} at leader epoch {leader_epoch}, below "
            f"{floor} published at that epoch or an older one"
        )
        self.published_hw_by_epoch[leader_epoch] = update.current
        for record in leader.log.records_between(update.previous, update.current):
            earlier = self.committed.setdefault(record.offset, record)
            assert earlier == record, f"offset {record.offset} committed twice: {earlier} then {record}"
            self.committed_end = max(self.committed_end, record.offset + 1)

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
        if self.network is None:
            self.alter_requests.append((broker.broker_id, broker.broker_epoch, proposal))
        else:
            self._send(broker.broker_id, CONTROLLER, AlterRequest(broker.broker_id, broker.broker_epoch, proposal))

    def _alter_partition_in_flight(self) -> set[tuple[int, AlterPartitionProposal]]:
        if self.network is None:
            return {(b, p) for b, _, p in self.alter_requests} | {(b, p) for b, _, p, _ in self.alter_answers}
        in_flight = set()
        for message in self.network.in_flight:
            if isinstance(message.payload, AlterRequest):
                in_flight.add((message.payload.broker_id, message.payload.proposal))
            elif isinstance(message.payload, AlterAnswer):
                in_flight.add((message.dst, message.payload.proposal))
        return in_flight

    def resend_pending_proposals(self) -> None:
        """The adapters' retry: a proposal with no request or answer in flight is sent again, unchanged."""
        in_flight = self._alter_partition_in_flight()
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
        if lose or not broker.alive:
            return True  # the answer never arrives; the proposal stays pending
        self._take_alter_answer(broker, broker_epoch, proposal, answer)
        return True

    def _take_alter_answer(
        self, broker: SimBroker, broker_epoch: int, proposal: AlterPartitionProposal, answer: AlterPartitionAnswer
    ) -> str:
        if broker.broker_epoch != broker_epoch:
            return "ignored (an earlier incarnation asked)"
        outcome = broker.replica.on_alter_partition_answer(proposal, answer, log=broker.log)
        self.events.append(f"broker {broker.broker_id}: AlterPartition {type(outcome).__name__}")
        hw_update = getattr(outcome, "high_watermark_update", None)
        if hw_update is not None:
            self._after_leader_hw(broker, hw_update)
        return type(outcome).__name__

    def settle_alter_partition(self, rounds: int = 5) -> None:
        for _ in range(rounds):
            self.resend_pending_proposals()
            if self.network is not None:
                self.drain_network()
            while self.deliver_alter_request() or self.deliver_alter_answer():
                pass

    # --- time and failures -------------------------------------------------------------------

    def tick(self, delta_ms: int) -> None:
        self.clock.advance(delta_ms)
        if not self.pending:
            return  # no produce waits in any purgatory: nothing can expire
        now_ms = self.now_ms
        for broker in self.brokers.values():
            if broker.alive and len(broker.purgatory):
                self._resolve_ops(broker.purgatory.expire(now_ms))

    def kill(self, broker_id: int, *, power_loss: bool = False, kept_fraction: float | None = None) -> None:
        """Crash: memory is gone, the log stays (a power loss also loses what it held unsynced, but for
        `kept_fraction` of it: DiskLog.lose_unsynced); the controller notices."""
        broker = self.brokers[broker_id]
        assert broker.alive
        self._stop(broker)
        self._crashed(broker, power_loss, kept_fraction)
        self.events.append(f"broker {broker_id}: killed{' by a power loss' if power_loss else ''}")
        self._controller_hears_death(broker)

    def _stop(self, broker: SimBroker) -> None:
        broker.alive = False
        broker.inbox.clear()
        for ticket in self.pending:
            if ticket.broker_id == broker.broker_id:  # the client's connection dropped
                ticket.error_code = ticket.broker_code = ErrorCode.REQUEST_TIMED_OUT
        self.pending = [t for t in self.pending if t.broker_code is None]

    def fail_next_fsync(self, broker_id: int, kept_fraction: float) -> None:
        """The broker's disk fails the fsync of its next append (leader or follower); the halt that follows
        keeps `kept_fraction` of what the disk held unsynced."""
        self.brokers[broker_id].log.fail_next_fsync(kept_fraction)

    def stop_disk_faults(self) -> None:
        """No armed fsync failure fires any more (the final heal)."""
        for broker in self.brokers.values():
            broker.log.failing_fsync = None

    def _halt_if_told(self, broker: SimBroker) -> None:
        if broker.halting is not None and broker.alive:
            self.halt(broker.broker_id)

    def halt(self, broker_id: int) -> None:
        """Its only log directory went offline after a failed fsync (SimBroker.halting): the broker stops as
        runtime/halt.py does, without a clean shutdown, its ZooKeeper session ended on the way out. The
        pages that failed to sync may be gone: the tail since the last good fsync is lost whole or torn, as
        at a power loss (the kept fraction the disk's failure was armed with)."""
        broker = self.brokers[broker_id]
        assert broker.alive and broker.halting is not None
        self.fsync_errors += 1
        self._stop(broker)
        self.crashes += 1
        assert isinstance(broker.log, DiskLog)
        self._lose_unsynced(broker, broker.log.failed_fsync)
        broker.log.failed_fsync = None
        self.events.append(f"broker {broker_id}: halted, its log directory offline ({broker.halting})")
        self._controller_hears_halt(broker)

    def _controller_hears_halt(self, broker: SimBroker) -> None:
        """The stub hears of a halted broker as of a dead one."""
        self._controller_hears_death(broker)

    def _controller_hears_death(self, broker: SimBroker) -> None:
        """The stub controller notices at once (unless the broker was already cut off from it)."""
        if not broker.isolated:
            self.controller.broker_lost(broker.broker_id)
            self.broadcast()

    def restart(self, broker_id: int, *, checkpoint_hw: int | None = None) -> None:
        """A killed broker starts again from its log and checkpointed HW and registers.

        `checkpoint_hw`: what its HW checkpoint file says (checkpoints are periodic, so it
        may lag); by default the HW it had when it died.
        """
        old = self.brokers[broker_id]
        assert not old.alive
        hw = self._checkpoint(old, checkpoint_hw)
        self.brokers[broker_id] = self._fresh_broker(broker_id, old.log, hw, old.incarnation + 1)
        self.events.append(f"broker {broker_id}: restarted")
        self._register_restarted(self.brokers[broker_id])

    def _register_restarted(self, broker: SimBroker) -> None:
        self.controller.started_uncleanly(broker.broker_id)  # no clean-shutdown marker: it leaves the ELR
        self.controller.broker_back(broker.broker_id)
        broker.broker_epoch = self.controller.broker_epochs[broker.broker_id]
        self.broadcast()

    def bounce(self, broker_id: int, *, checkpoint_hw: int | None = None, power_loss: bool = False,
               kept_fraction: float | None = None) -> None:
        """A restart faster than the controller's session timeout: the ISR keeps the broker."""
        old = self.brokers[broker_id]
        assert old.alive
        self._crashed(old, power_loss, kept_fraction)
        hw = self._checkpoint(old, checkpoint_hw)
        self.brokers[broker_id] = self._fresh_broker(broker_id, old.log, hw, old.incarnation + 1)
        self.events.append(f"broker {broker_id}: bounced{' after a power loss' if power_loss else ''}")
        self._register_bounced(self.brokers[broker_id])

    def _register_bounced(self, broker: SimBroker) -> None:
        self.controller.started_uncleanly(broker.broker_id)
        broker.broker_epoch = self.controller.register(broker.broker_id)
        self._send_decision(broker)  # the answer to its re-registration

    def _crashed(self, broker: SimBroker, power_loss: bool, kept_fraction: float | None) -> None:
        self.crashes += 1
        if power_loss:
            self.power_losses += 1
            self._lose_unsynced(broker, kept_fraction)

    def _lose_unsynced(self, broker: SimBroker, kept_fraction: float | None) -> None:
        assert isinstance(broker.log, DiskLog)
        lost, kept = broker.log.lose_unsynced(kept_fraction)
        self.records_lost_unsynced += lost
        if kept:
            self.torn_writes += 1
            self.events.append(f"broker {broker.broker_id}: {kept} records never synced survived the loss")

    def _checkpoint(self, old: SimBroker, checkpoint_hw: int | None) -> int:
        """The HW the restarted broker reads from its checkpoint file (may lag: checkpoints are periodic)."""
        if checkpoint_hw is None:
            return old.replica.high_watermark
        if checkpoint_hw < old.replica.high_watermark:
            self.stale_checkpoints += 1
        return checkpoint_hw

    def isolate(self, broker_id: int) -> None:
        """Cut the broker off from the controller (session expiry); it keeps running."""
        broker = self.brokers[broker_id]
        broker.isolated = True
        broker.inbox.clear()
        self.isolations += 1
        self.events.append(f"broker {broker_id}: isolated")
        self._controller_hears_isolation(broker)

    def _controller_hears_isolation(self, broker: SimBroker) -> None:
        """The stub declares the broker lost at once, as if its session had expired."""
        self.controller.broker_lost(broker.broker_id)
        self.broadcast()

    def heal(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        broker.isolated = False
        self.events.append(f"broker {broker_id}: healed")
        self._controller_hears_heal(broker)

    def _controller_hears_heal(self, broker: SimBroker) -> None:
        self.controller.broker_back(broker.broker_id)
        broker.broker_epoch = self.controller.broker_epochs[broker.broker_id]
        self.broadcast()

    def _fresh_broker(self, broker_id: int, log: FakeLog, checkpoint_hw: int, incarnation: int = 0) -> SimBroker:
        return SimBroker(
            incarnation=incarnation,
            broker_id=broker_id,
            log=log,
            replica=PartitionReplica(TP, broker_id, high_watermark=checkpoint_hw),
            producer_state=rebuild_producer_state(log.headers()),
            purgatory=Purgatory(operations_max=1_000),
        )

    # --- the controller side -------------------------------------------------------------------

    @property
    def controller_ids(self) -> tuple[int, ...]:
        """The network node ids of the controller processes."""
        return (CONTROLLER,)

    def heal_controllers(self) -> None:
        """The stub never fails."""

    def control_counts(self) -> tuple[int, int, int]:
        """(controller processes, ZooKeeper session expiries, seats won): the stub's one seat, no ZooKeeper."""
        return 1, 0, 1

    # --- invariants ------------------------------------------------------------------------------

    def note_leader(self, broker: SimBroker) -> None:
        holder = self.leaders_by_epoch.setdefault(broker.leader_epoch, broker.broker_id)
        assert holder == broker.broker_id, f"leader epoch {broker.leader_epoch} led by {holder} and {broker.broker_id}"

    def check_invariants(self) -> None:
        check_invariants(self)

    def counts(self) -> SimCounts:
        return SimCounts(self.crashes, self.power_losses, self.stale_checkpoints, self.records_lost_unsynced,
                         self.isolations, self.torn_writes, self.fsync_errors)

    def logs(self) -> dict[int, list[str]]:
        return {b: broker.log.payloads() for b, broker in self.brokers.items()}
