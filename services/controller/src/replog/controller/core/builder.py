"""PlanBuilder: the pending changes of one decision, seen as an overlay on the state.

Theory of operation
-------------------
Handlers never touch the state; they tell a builder what should change, and read
through it (``state_of``, ``assignment_of``, ...) so a later step of the same
decision sees an earlier one (a reassignment that starts and completes in one
plan, an election after a broker left the ISR).  ``finish()`` turns the overlay
into a :class:`~.plan.Plan`.  The builder owns the rules every plan must keep,
so handlers cannot forget them:

* one znode write per partition per plan: ``partition_epoch`` is the base
  version + 1 (0 for a created znode) however many steps touched it, and
  ``leader_epoch`` is the base + 1 if any step changed the leader or asked for
  a bump, else unchanged; writing what is already there writes nothing;
* every write keeps the ISR non-empty, inside the assignment, free of
  duplicates, and the leader in it or ``NO_LEADER`` (asserts: a violation is a
  controller bug);
* ZooKeeper writes come in a crash-safe order (``_zk_writes``);
* one LeaderAndIsr request per broker, to live brokers only, covering every
  partition the plan changed on it (but see ISR-only changes below; all its
  replicas when ``init``); one
  StopReplica per broker; never both for the same replica in one plan;
* an ISR-only change (same leader, same leader epoch, same assignment, e.g. a
  dead follower leaving the ISR) goes in LeaderAndIsr to the leader alone: the
  leader is the one replica that acts on an ISR. Its followers learn it from
  UpdateMetadata, as they learn the leader's own AlterPartition changes (Kafka
  has done the same since KIP-497). A broker failure at 10K partitions sent
  6,666 such changes to followers that did nothing with them, in the middle
  of the moved partitions' first replication round;
* UpdateMetadata goes to every live broker: the full cluster to brokers that
  need it, the changed partitions to the others.

Speed: a broker failure may rewrite 100K partitions, so ``write()`` and the
loops in ``finish()`` do a handful of dict operations per partition and nothing
per replica beyond one list append.  Written partitions live in one
insertion-ordered dict (``_states``), which is also the write order and the
notification order.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import IllegalStateTransition
from .model import NO_LEADER, BrokerInfo, ControllerState, LeaderAndIsr, ReplicaAssignment, TopicPartition
from .plan import (
    ClearReassignment,
    CreatePartitionState,
    DeleteTopicZnodes,
    LeaderAndIsrRequest,
    LearnPartitions,
    PartitionDecision,
    Plan,
    PlanMetrics,
    Reply,
    SetAssignment,
    SetDeletionPending,
    SetLiveBrokers,
    SetPartitionState,
    SetReassignment,
    SetShuttingDown,
    SetTopicConfig,
    StateUpdate,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadata,
    ZkWrite,
)
from .states import (
    PartitionState,
    ReplicaState,
    check_partition_transition,
    check_replica_transition,
    derive_partition_state,
    derive_replica_state,
)
from .topic_config import TopicConfig


class PlanBuilder:
    def __init__(self, state: ControllerState) -> None:
        self.base = state
        self._base_states = state.partition_states
        self._base_assignments = state.assignments
        self._base_deleting = state.topics_being_deleted
        self.controller_epoch = state.controller_epoch
        self.live: Mapping[int, BrokerInfo] = state.live_brokers
        self.shutting_down: frozenset[int] = state.shutting_down_brokers
        self.eligible: frozenset[int] = frozenset(state.live_brokers) - state.shutting_down_brokers
        # overlay
        self._states: dict[TopicPartition, LeaderAndIsr] = {}
        self._created: set[TopicPartition] = set()
        self._assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self._configs: dict[str, TopicConfig] = {}
        self._deleting: dict[str, frozenset[tuple[int, int]] | None] = {}
        self._reassignments: dict[TopicPartition, tuple[int, ...] | None] = {}
        self._offline_delta = 0
        # outputs
        self._assignment_topics: dict[str, None] = {}
        self._other_writes: list[ZkWrite] = []
        self._cleared_requests: dict[TopicPartition, None] = {}
        self._state_updates: list[StateUpdate] = []
        self._notify: dict[TopicPartition, None] = {}
        self._metadata_only: set[TopicPartition] = set()
        self._new_replicas: set[tuple[TopicPartition, int]] = set()
        self._stops: dict[int, dict[TopicPartition, StopReplicaPartition]] = {}
        self._stopped: set[tuple[TopicPartition, int]] = set()
        self._init_brokers: set[int] = set()
        self._full_metadata_brokers: set[int] = set()
        self._deleted_topics: list[str] = []
        self._live_changed = False
        self.reply: Reply | None = None
        self.follow_ups: list[object] = []
        # metrics
        self.leader_elections = 0
        self.unclean_leader_elections = 0
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.failed_isr_updates = 0
        self.partitions_moved = 0

    # --- reading through the overlay -------------------------------------------

    def state_of(self, tp: TopicPartition) -> LeaderAndIsr | None:
        pending = self._states.get(tp)
        return pending if pending is not None else self._base_states.get(tp)

    def assignment_of(self, tp: TopicPartition) -> ReplicaAssignment | None:
        pending = self._assignments.get(tp)
        return pending if pending is not None else self._base_assignments.get(tp)

    def config_of(self, topic: str) -> TopicConfig:
        return self._configs.get(topic) or self.base.config_of(topic)

    def is_deleting(self, topic: str) -> bool:
        if topic in self._deleting:
            return self._deleting[topic] is not None
        return topic in self._base_deleting

    def deletion_pending(self, topic: str) -> frozenset[tuple[int, int]] | None:
        if topic in self._deleting:
            return self._deleting[topic]
        return self._base_deleting.get(topic)

    def deleting_topics(self) -> list[str]:
        return sorted(t for t in {*self._base_deleting, *self._deleting} if self.is_deleting(t))

    def reassignment_of(self, tp: TopicPartition) -> tuple[int, ...] | None:
        if tp in self._reassignments:
            return self._reassignments[tp]
        return self.base.reassignments.get(tp)

    def reassigning_partitions(self) -> list[TopicPartition]:
        """Partitions with a reassignment in progress, known ones first."""
        tps = [*self.base.reassignments, *(tp for tp in self._reassignments if tp not in self.base.reassignments)]
        return [tp for tp in tps if self.reassignment_of(tp) is not None]

    def partitions_of_topic(self, topic: str) -> list[TopicPartition]:
        known = [TopicPartition(topic, p) for p in self.base.partitions_by_topic.get(topic, ())]
        learned = [tp for tp in self._assignments if tp.topic == topic and tp not in self._base_assignments]
        return known + sorted(learned)

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        state = self.state_of(tp)
        return derive_partition_state(
            self.assignment_of(tp) is not None, self.is_deleting(tp.topic),
            None if state is None else state.leader,
        )

    def replica_state(self, tp: TopicPartition, broker_id: int) -> ReplicaState:
        assignment = self.assignment_of(tp)
        pending = self.deletion_pending(tp.topic)
        return derive_replica_state(
            assignment is not None and broker_id in assignment.replicas,
            broker_id in self.live,
            None if pending is None else (tp.partition, broker_id) in pending,
        )

    # --- partition state writes --------------------------------------------------

    def write(
        self, tp: TopicPartition, leader: int, isr: tuple[int, ...], *,
        bump_leader_epoch: bool = False, notify_replicas: bool = True,
    ) -> LeaderAndIsr:
        """Record the partition's next leader and ISR; creates the znode if it has none.

        ``notify_replicas=False`` (an accepted AlterPartition: the leader learns
        the result in the reply) sends the change in UpdateMetadata only.
        Writing what is already there is a no-op.
        """
        if type(isr) is not tuple:
            isr = tuple(isr)
        states = self._states
        base = self._base_states.get(tp)
        pending = states.get(tp)
        current = base if pending is None else pending
        if current is not None and leader == current.leader and isr == current.isr and not bump_leader_epoch:
            return current  # nothing changes: no write, no request
        if base is None or tp in self._created:
            new = self._create(tp, leader, isr)
        else:
            bumped = pending is not None and pending.leader_epoch != base.leader_epoch
            leader_epoch = base.leader_epoch
            if bump_leader_epoch or bumped or leader != base.leader:
                leader_epoch += 1
            new = LeaderAndIsr(leader, leader_epoch, isr, self.controller_epoch, base.partition_epoch + 1)
        if self._deleting or self._base_deleting:
            assert not self.is_deleting(tp.topic), f"{tp}: state write while its topic is being deleted"
        # The rules every write keeps; a failure is a controller bug.
        assignment = (self._assignments.get(tp) if self._assignments else None) or self._base_assignments.get(tp)
        if assignment is None:
            raise IllegalStateTransition(f"partition {tp}: state write without an assignment")
        replicas = assignment.replicas
        assert isr, f"{tp}: the ISR must never be empty"
        for broker_id in isr:
            assert broker_id in replicas, f"{tp}: ISR member {broker_id} not assigned {replicas}"
        if current is None or len(isr) > len(current.isr):  # only a growing ISR can gain a duplicate
            assert len(set(isr)) == len(isr), f"{tp}: duplicate ISR member in {isr}"
        assert leader == NO_LEADER or leader in isr, f"{tp}: leader {leader} not in ISR {isr}"
        states[tp] = new
        self._offline_delta += (leader == NO_LEADER) - (current is not None and current.leader == NO_LEADER)
        if not notify_replicas:
            if pending is None:
                self._metadata_only.add(tp)
        elif self._metadata_only:
            self._metadata_only.discard(tp)
        return new

    def leader_epoch_after_bump(self, tp: TopicPartition) -> int:
        """The leader epoch the partition has once this plan bumps it."""
        base = self._base_states.get(tp)
        return 0 if base is None or tp in self._created else base.leader_epoch + 1

    def _create(self, tp: TopicPartition, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        if tp not in self._created:
            target = PartitionState.OFFLINE if leader == NO_LEADER else PartitionState.ONLINE
            check_partition_transition(tp, self.partition_state(tp), target)
            self._created.add(tp)
        return LeaderAndIsr(leader, 0, isr, self.controller_epoch, 0)

    # --- assignments, topics, deletions, reassignments -----------------------------

    def set_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """Change a known partition's assignment; the plan rewrites its topic znode."""
        assert tp in self._base_assignments or tp in self._assignments, f"{tp} is unknown"
        self._assignments[tp] = assignment
        self._assignment_topics[tp.topic] = None

    def learn_partitions(self, topic: str, assignment: Mapping[int, ReplicaAssignment]) -> None:
        """Partitions the gateway already wrote to ZooKeeper (NON_EXISTENT -> NEW)."""
        for partition, replica_assignment in assignment.items():
            tp = TopicPartition(topic, partition)
            check_partition_transition(tp, self.partition_state(tp), PartitionState.NEW)
            self._assignments[tp] = replica_assignment
        self._state_updates.append(LearnPartitions(topic, dict(assignment)))

    def set_config(self, topic: str, config: TopicConfig) -> None:
        self._configs[topic] = config
        self._state_updates.append(SetTopicConfig(topic, config))

    def set_deletion_pending(self, topic: str, pending: frozenset[tuple[int, int]]) -> None:
        self._deleting[topic] = pending
        self._state_updates.append(SetDeletionPending(topic, pending))

    def delete_topic(self, topic: str) -> None:
        """Remove the topic's znodes; its partitions go OFFLINE -> NON_EXISTENT."""
        partitions = self.partitions_of_topic(topic)
        for tp in partitions:
            check_partition_transition(tp, self.partition_state(tp), PartitionState.NON_EXISTENT)
        self._offline_delta -= sum(
            1 for tp in partitions if (s := self.state_of(tp)) is not None and s.leader == NO_LEADER)
        self._deleting[topic] = None
        self._other_writes.append(DeleteTopicZnodes(topic, tuple(tp.partition for tp in partitions)))

    def set_reassignment(self, tp: TopicPartition, target: tuple[int, ...] | None) -> None:
        self._reassignments[tp] = target
        self._state_updates.append(SetReassignment(tp, target))

    def clear_reassignment_request(self, tp: TopicPartition) -> None:
        """Remove the partition from ``/admin/reassign_partitions`` (one op per plan)."""
        self._cleared_requests[tp] = None

    def zk_write(self, op: ZkWrite) -> None:
        """Append a write that needs no overlay (DeleteAdminRequest)."""
        self._other_writes.append(op)

    def state_update(self, op: StateUpdate) -> None:
        self._state_updates.append(op)

    # --- brokers ---------------------------------------------------------------------

    def set_live_brokers(self, live: Mapping[int, BrokerInfo], shutting_down: frozenset[int]) -> None:
        self._live_changed = True
        self._state_updates.append(SetLiveBrokers(dict(live)))
        self.live = live
        if shutting_down != self.shutting_down:
            self.set_shutting_down(shutting_down)
        self.eligible = frozenset(live) - shutting_down

    def set_shutting_down(self, shutting_down: frozenset[int]) -> None:
        self.shutting_down = shutting_down
        self.eligible = frozenset(self.live) - shutting_down
        self._state_updates.append(SetShuttingDown(shutting_down))

    # --- broker requests -----------------------------------------------------------

    def notify(self, tp: TopicPartition) -> None:
        """Send the partition's current decision to its live replicas."""
        self._notify[tp] = None

    def start_replica(self, tp: TopicPartition, broker_id: int) -> None:
        """A replica added by a reassignment: LeaderAndIsr with ``is_new``."""
        self._new_replicas.add((tp, broker_id))
        self._notify[tp] = None

    def stop_replica(self, tp: TopicPartition, broker_id: int, *, delete: bool, leader_epoch: int) -> None:
        """StopReplica to a live broker; checks ONLINE/OFFLINE -> OFFLINE (-> DELETION_STARTED)."""
        if broker_id not in self.live:
            return
        current = self.replica_state(tp, broker_id)
        if current is not ReplicaState.DELETION_STARTED:
            check_replica_transition(tp, broker_id, current, ReplicaState.OFFLINE)
            if delete:
                check_replica_transition(tp, broker_id, ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED)
        self._stops.setdefault(broker_id, {})[tp] = StopReplicaPartition(tp, leader_epoch, delete)
        self._stopped.add((tp, broker_id))

    def init_broker(self, broker_id: int) -> None:
        """Send the broker an INIT LeaderAndIsr with all its replicas, and full metadata."""
        self._init_brokers.add(broker_id)
        self._full_metadata_brokers.add(broker_id)

    def topic_deleted_in_metadata(self, topic: str) -> None:
        self._deleted_topics.append(topic)

    # --- finishing -----------------------------------------------------------------

    def finish(self) -> Plan:
        decisions: dict[TopicPartition, PartitionDecision] = {}
        leader_and_isr, changed = self._leader_and_isr_requests(decisions)
        zk_writes, first_wave_writes, first_wave, leader_and_isr = self._first_wave(self._zk_writes(), leader_and_isr)
        return Plan(
            zk_writes=zk_writes,
            first_wave_writes=first_wave_writes,
            first_wave=first_wave,
            first_wave_metadata=self._first_wave_metadata(first_wave, changed),
            state_updates=tuple(self._state_updates),
            leader_and_isr=leader_and_isr,
            update_metadata=self._update_metadata(decisions, changed),
            stop_replica=tuple(
                StopReplicaRequest(b, self.live[b].broker_epoch, tuple(stops.values()))
                for b, stops in sorted(self._stops.items())
            ),
            reply=self.reply,
            follow_ups=tuple(self.follow_ups),
            metrics=PlanMetrics(
                leader_elections=self.leader_elections,
                unclean_leader_elections=self.unclean_leader_elections,
                isr_shrinks=self.isr_shrinks,
                isr_expands=self.isr_expands,
                failed_isr_updates=self.failed_isr_updates,
                partitions_moved=self.partitions_moved,
                offline_partitions=self.base.offline_partition_count + self._offline_delta,
            ),
        )

    def _zk_writes(self) -> tuple[ZkWrite, ...]:
        """Writes in a crash-safe order: partition states, then assignments, then the rest.

        State writes only ever shrink an ISR within the old assignment (or create
        a partition the gateway already assigned), and an assignment drops only
        replicas the new ISRs no longer hold, so if the executor stops between
        two ``multi``s every ISR is still inside its assignment.  Request
        clean-up and topic deletion come last.
        """
        created = self._created
        base_states = self._base_states
        writes: list[ZkWrite] = [
            CreatePartitionState(tp, state) if tp in created
            else SetPartitionState(tp, state, base_states[tp].partition_epoch)
            for tp, state in self._states.items()
        ]
        for topic in self._assignment_topics:
            assignment = {tp.partition: self.assignment_of(tp) for tp in self.partitions_of_topic(topic)}
            writes.append(SetAssignment(topic, assignment))
        if self._cleared_requests:
            writes.append(ClearReassignment(tuple(self._cleared_requests)))
        writes += self._other_writes
        return tuple(writes)

    def _first_wave(self, writes: tuple[ZkWrite, ...], requests: tuple[LeaderAndIsrRequest, ...]):
        """(writes, first_wave_writes, first_wave, the other LeaderAndIsr requests): see ``Plan``.

        Only for a plan that writes nothing but existing partitions' states (a broker
        failure, a controlled shutdown, an election): the new leader epochs are written
        first and their LeaderAndIsr goes out at once, ahead of the ISR-only changes (the
        executor decides how far ahead). A plan that also writes assignments or creates
        partitions keeps every request until everything is written (crash safety, see
        ``_zk_writes``).
        """
        if not writes or any(type(w) is not SetPartitionState for w in writes):
            return writes, 0, (), requests
        base = self._base_states
        moved = {w.partition for w in writes if w.state.leader_epoch != base[w.partition].leader_epoch}
        if not moved:
            return writes, 0, (), requests
        ordered = (tuple(w for w in writes if w.partition in moved)
                   + tuple(w for w in writes if w.partition not in moved))
        first, rest = [], []
        for request in requests:
            if request.init or request.broker_id in self.shutting_down:
                rest.append(request)  # a stopping broker's new role (follower) waits for nobody
                continue
            now = tuple(d for d in request.partitions if d.partition in moved)
            later = tuple(d for d in request.partitions if d.partition not in moved)
            if now:
                first.append(LeaderAndIsrRequest(request.broker_id, request.broker_epoch, False, now))
            if later:
                rest.append(LeaderAndIsrRequest(request.broker_id, request.broker_epoch, False, later))
        return ordered, len(moved), tuple(first), tuple(rest)

    def _first_wave_metadata(
        self, first_wave: tuple[LeaderAndIsrRequest, ...], changed: list[PartitionDecision]
    ) -> tuple[UpdateMetadata, ...]:
        """The first wave's partitions as an UpdateMetadata delta to every live broker (see ``Plan``).
        The plan's own UpdateMetadata still carries them too, with everything else."""
        moved = {d.partition for request in first_wave for d in request.partitions}
        partitions = tuple(d for d in changed if d.partition in moved)
        if not partitions:
            return ()
        live = tuple(sorted(self.live))
        return (UpdateMetadata(live, tuple(self.live[b] for b in live), partitions, (), False),)

    def _decision(self, tp: TopicPartition, decisions: dict[TopicPartition, PartitionDecision]) -> PartitionDecision | None:
        decision = decisions.get(tp)
        if decision is None:
            state = self.state_of(tp)
            if state is None:
                return None  # a NEW partition: nothing to tell yet
            decision = PartitionDecision(tp, state, self.assignment_of(tp), tp in self._created)
            decisions[tp] = decision
        return decision

    def _leader_and_isr_requests(
        self, decisions: dict[TopicPartition, PartitionDecision]
    ) -> tuple[tuple[LeaderAndIsrRequest, ...], list[PartitionDecision]]:
        """One request per broker, and the changed partitions (for UpdateMetadata)."""
        live = self.live
        stopped = self._stopped
        new_replicas = self._new_replicas
        init = self._init_brokers
        # INIT brokers need de-duplication (their replicas may also have changed);
        # for the others every partition comes once, so a list will do.
        per_init: dict[int, dict[TopicPartition, PartitionDecision]] = {b: {} for b in sorted(init)}
        # per_broker holds only live brokers, so a lookup miss means dead (or INIT).
        per_broker: dict[int, list[PartitionDecision]] = {b: [] for b in live if b not in init}
        for broker_id, entries in per_init.items():
            self._init_entries(broker_id, entries, decisions)
        changed: list[PartitionDecision] = []
        metadata_only = self._metadata_only
        created = self._created
        pending_assignments = self._assignments
        base_assignments = self._base_assignments
        keep = bool(per_init or self._full_metadata_brokers)  # decisions reused below
        special = bool(stopped or new_replicas or per_init)
        recipients_of: dict[tuple[int, ...], list[list[PartitionDecision]]] = {}
        base_states = self._base_states
        notify = self._notify
        # Written partitions first (in write order), then those only re-sent.
        notified = self._states.items()
        if notify:
            notified = [*notified, *((tp, self.state_of(tp)) for tp in notify if tp not in self._states)]
        for tp, state in notified:
            if state is None:
                continue  # a NEW partition: nothing to tell yet
            assignment = (pending_assignments and pending_assignments.get(tp)) or base_assignments[tp]
            decision = PartitionDecision(tp, state, assignment, tp in created if created else False)
            if keep:
                decisions[tp] = decision
            changed.append(decision)
            if metadata_only and tp in metadata_only:
                continue
            base = base_states.get(tp)
            if (base is not None and state.leader == base.leader and state.leader_epoch == base.leader_epoch
                    and state.leader != NO_LEADER and not (created and tp in created)
                    and not (pending_assignments and tp in pending_assignments) and not (notify and tp in notify)):
                # ISR-only: the leader alone hears (see the module docstring); an INIT leader has it already.
                entries = per_broker.get(state.leader)
                if entries is not None and not (stopped and (tp, state.leader) in stopped):
                    entries.append(decision)
                continue
            if not special:  # the common case, e.g. a failover's new leaders: every live replica hears
                replicas = assignment.replicas
                recipients = recipients_of.get(replicas)
                if recipients is None:  # few distinct replica lists: look each up once
                    recipients = recipients_of[replicas] = [
                        per_broker[b] for b in replicas if b in per_broker]
                for entries in recipients:
                    entries.append(decision)
                continue
            for broker_id in assignment.replicas:
                if broker_id not in live or (tp, broker_id) in stopped:
                    continue
                entry = decision
                if (tp, broker_id) in new_replicas:
                    entry = decision._replace(is_new=True)
                entries = per_broker.get(broker_id)
                if entries is not None:
                    entries.append(entry)
                else:
                    per_init[broker_id][tp] = entry
        requests = [
            LeaderAndIsrRequest(b, live[b].broker_epoch, True, tuple(entries.values()))
            for b, entries in per_init.items() if b in live
        ]
        requests += [
            LeaderAndIsrRequest(b, live[b].broker_epoch, False, tuple(entries))
            for b, entries in per_broker.items() if entries
        ]
        requests.sort(key=lambda r: r.broker_id)
        return tuple(requests), changed

    def _init_entries(
        self, broker_id: int, entries: dict[TopicPartition, PartitionDecision],
        decisions: dict[TopicPartition, PartitionDecision],
    ) -> None:
        """Every replica the broker holds, for its INIT request (deleted topics left out)."""
        held = self.base.partitions_by_broker.get(broker_id, ())
        if not (self._deleting or self._base_deleting or self._stopped or self._assignments):
            # The common case (a controller failover): every partition the index names is the
            # broker's and told as it stands. The same decisions serve every broker.
            known = decisions.get
            for tp in held:
                decision = known(tp) or self._decision(tp, decisions)
                if decision is not None:
                    entries[tp] = decision
            return
        for tp in held:
            if self.is_deleting(tp.topic) or (tp, broker_id) in self._stopped:
                continue
            assignment = self.assignment_of(tp)
            if assignment is None or broker_id not in assignment.replicas:
                continue
            decision = self._decision(tp, decisions)
            if decision is not None:
                entries[tp] = decision

    def _update_metadata(
        self, decisions: dict[TopicPartition, PartitionDecision], changed: list[PartitionDecision]
    ) -> tuple[UpdateMetadata, ...]:
        live_brokers = tuple(self.live[b] for b in sorted(self.live))
        requests: list[UpdateMetadata] = []
        full_to = tuple(sorted(b for b in self._full_metadata_brokers if b in self.live))
        if full_to:
            every = []
            partitions = {**dict.fromkeys(self._base_states), **dict.fromkeys(self._states)}
            deleting = self._deleting or self._base_deleting
            known = decisions.get
            for tp in partitions:
                if not deleting or not self.is_deleting(tp.topic):
                    decision = known(tp) or self._decision(tp, decisions)
                    if decision is not None:
                        every.append(decision)
            requests.append(UpdateMetadata(full_to, live_brokers, tuple(every), (), True))
        rest = tuple(sorted(b for b in self.live if b not in self._full_metadata_brokers))
        if rest and (changed or self._deleted_topics or self._live_changed):
            requests.append(UpdateMetadata(rest, live_brokers, tuple(changed), tuple(self._deleted_topics), False))
        return tuple(requests)
