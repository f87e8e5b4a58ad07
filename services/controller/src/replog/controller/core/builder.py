"""PlanBuilder: the pending changes of one decision, seen as an overlay on the state.

Theory of operation
-------------------
Handlers never touch the state; they tell a builder what should change, and read through it (``state_of``,
``assignment_of``, ...) so a later step of the same decision sees an earlier one (a reassignment that starts and
completes in one plan, an election after a broker left the ISR).  ``finish()`` turns the overlay into a
:class:`~.plan.Plan`: the requests come from ``requests.py`` (who hears what), the order of its steps from
``sequencing.py``.  The builder owns the rules every write must keep, so handlers cannot forget them:

* one znode write per partition per plan: ``partition_epoch`` is the base version + 1 (0 for a created
  znode) however many steps touched it, and ``leader_epoch`` is the base + 1 if any step changed the
  leader or asked for a bump, else unchanged; writing what is already there writes nothing;
* every write keeps the ISR non-empty, inside the assignment, free of duplicates, and the leader in it
  or ``NO_LEADER`` (asserts: a violation is a controller bug);
* every write keeps the ELR by ``elr.py``'s rules unless the handler names it;
* ZooKeeper writes come in a crash-safe order (``_zk_writes``);
* never a StopReplica and a LeaderAndIsr for the same replica in one plan.

The pending changes (``pending_states`` ... ``live_changed``) are public so that ``requests.py`` can
read them when the plan is finished; handlers change them only through the methods.

Speed: a broker failure may rewrite 100K partitions, so ``write()`` does a handful of dict operations
per partition.  Written partitions live in one insertion-ordered dict (``pending_states``), which is
also the write order and the notification order.
"""

from __future__ import annotations

from collections.abc import Mapping

from replog.common.core.partitions import NO_LEADER, TopicPartition

from .elr import lowest_default, next_elr
from .errors import IllegalStateTransition
from .model import BrokerInfo, ControllerState, LeaderAndIsr, ReplicaAssignment, TopicElectionConfig
from .plan import (
    ClearReassignment,
    CreatePartitionState,
    DeleteTopicZnodes,
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
    ZkWrite,
)
from .requests import leader_and_isr_requests, stop_replica_requests, update_metadata_requests
from .sequencing import plan_steps
from .states import (
    PartitionState,
    ReplicaState,
    check_partition_transition,
    check_replica_transition,
    derive_partition_state,
    derive_replica_state,
)
from .steps import REQUESTS, Send


class PlanBuilder:
    def __init__(self, state: ControllerState) -> None:
        self.base = state
        self.base_states = state.partition_states
        self.base_assignments = state.assignments
        self.base_deleting = state.topics_being_deleted
        self.controller_epoch = state.controller_epoch
        self.live: Mapping[int, BrokerInfo] = state.live_brokers
        self.shutting_down: frozenset[int] = state.shutting_down_brokers
        self.eligible: frozenset[int] = frozenset(state.live_brokers) - state.shutting_down_brokers
        self.brokers_min_isr = lowest_default(state.live_brokers)  # for topics without their own (elr.py)
        # pending changes
        self.pending_states: dict[TopicPartition, LeaderAndIsr] = {}
        self.created: set[TopicPartition] = set()
        self.pending_assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self._configs: dict[str, TopicElectionConfig] = {}
        self.pending_deleting: dict[str, frozenset[tuple[int, int]] | None] = {}
        self._reassignments: dict[TopicPartition, tuple[int, ...] | None] = {}
        self._offline_delta = 0
        # what the plan will write and tell
        self._assignment_topics: dict[str, None] = {}
        self._other_writes: list[ZkWrite] = []
        self._cleared_requests: dict[TopicPartition, None] = {}
        self._state_updates: list[StateUpdate] = []
        self.notified: dict[TopicPartition, None] = {}
        self.metadata_only: set[TopicPartition] = set()
        self.new_replicas: set[tuple[TopicPartition, int]] = set()
        self.stops: dict[int, dict[TopicPartition, StopReplicaPartition]] = {}
        self.stopped: set[tuple[TopicPartition, int]] = set()
        self.init_brokers: set[int] = set()
        self.full_metadata_brokers: set[int] = set()
        self.deleted_topics: list[str] = []
        self.live_changed = False
        self.reply: Reply | None = None
        self._stopping_broker: int | None = None
        self.follow_ups: list[object] = []
        # metrics
        self.leader_elections = 0
        self.unclean_leader_elections = 0
        self.lossy_leader_elections: list[tuple[TopicPartition, int]] = []
        self.unclean_partitions: list[TopicPartition] = []
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.failed_isr_updates = 0
        self.partitions_moved = 0

    # --- reading through the overlay -------------------------------------------

    def state_of(self, tp: TopicPartition) -> LeaderAndIsr | None:
        pending = self.pending_states.get(tp)
        return pending if pending is not None else self.base_states.get(tp)

    def assignment_of(self, tp: TopicPartition) -> ReplicaAssignment | None:
        pending = self.pending_assignments.get(tp)
        return pending if pending is not None else self.base_assignments.get(tp)

    def config_of(self, topic: str) -> TopicElectionConfig:
        return self._configs.get(topic) or self.base.config_of(topic)

    def min_isr_of(self, topic: str) -> int | None:
        """min.insync.replicas as the ELR rules take it: the topic's own, else the live brokers' lowest default."""
        own = self.config_of(topic).min_insync_replicas
        return self.brokers_min_isr if own is None else own

    def is_deleting(self, topic: str) -> bool:
        if topic in self.pending_deleting:
            return self.pending_deleting[topic] is not None
        return topic in self.base_deleting

    def deletion_pending(self, topic: str) -> frozenset[tuple[int, int]] | None:
        if topic in self.pending_deleting:
            return self.pending_deleting[topic]
        return self.base_deleting.get(topic)

    def deleting_topics(self) -> list[str]:
        return sorted(t for t in {*self.base_deleting, *self.pending_deleting} if self.is_deleting(t))

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
        learned = [tp for tp in self.pending_assignments if tp.topic == topic and tp not in self.base_assignments]
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
        self, tp: TopicPartition, leader: int, isr: tuple[int, ...], *, bump_leader_epoch: bool = False,
        notify_replicas: bool = True, unclean: bool = False, elr: tuple[int, ...] | None = None,
    ) -> LeaderAndIsr:
        """Record the partition's next leader and ISR; creates the znode if it has none.

        ``notify_replicas=False`` (an accepted AlterPartition: the leader learns
        the result in the reply) sends the change in UpdateMetadata only.
        Writing what is already there is a no-op. ``unclean``: the leader was elected from outside
        the ISR; its leader epoch is recorded as the partition's unclean one. ``elr``: by default as
        ``elr.next_elr`` derives it from the ISR change (empty when unclean).
        """
        if type(isr) is not tuple:
            isr = tuple(isr)
        states = self.pending_states
        base = self.base_states.get(tp)
        pending = states.get(tp)
        current = base if pending is None else pending
        pending_assignments = self.pending_assignments
        assignment = (pending_assignments.get(tp) if pending_assignments else None) or self.base_assignments.get(tp)
        replicas = assignment.replicas if assignment is not None else ()
        if elr is None:
            elr = () if unclean or current is None else next_elr(
                isr_before=current.isr, elr_before=current.elr, isr_after=isr,
                min_isr=self.min_isr_of(tp.topic), replicas=replicas)
        if (current is not None and leader == current.leader and isr == current.isr and elr == current.elr
                and not bump_leader_epoch):
            return current  # nothing changes: no write, no request
        if assignment is None:
            raise IllegalStateTransition(f"partition {tp}: state write without an assignment")
        if base is None or tp in self.created:
            new = self._create(tp, leader, isr, elr)
        else:
            bumped = pending is not None and pending.leader_epoch != base.leader_epoch
            leader_epoch = base.leader_epoch
            if bump_leader_epoch or bumped or leader != base.leader:
                leader_epoch += 1
            new = LeaderAndIsr(leader, leader_epoch, isr, self.controller_epoch, base.partition_epoch + 1,
                               leader_epoch if unclean else current.unclean_leader_epoch, elr)
        if self.pending_deleting or self.base_deleting:
            assert not self.is_deleting(tp.topic), f"{tp}: state write while its topic is being deleted"
        # The rules every write keeps; a failure is a controller bug.
        assert isr, f"{tp}: the ISR must never be empty"
        for broker_id in isr:
            assert broker_id in replicas, f"{tp}: ISR member {broker_id} not assigned {replicas}"
        if current is None or len(isr) > len(current.isr):  # only a growing ISR can gain a duplicate
            assert len(set(isr)) == len(isr), f"{tp}: duplicate ISR member in {isr}"
        assert leader == NO_LEADER or leader in isr, f"{tp}: leader {leader} not in ISR {isr}"
        for broker_id in elr:
            assert broker_id in replicas and broker_id not in isr, f"{tp}: ELR {elr} vs ISR {isr}, {replicas}"
        states[tp] = new
        self._offline_delta += (leader == NO_LEADER) - (current is not None and current.leader == NO_LEADER)
        if not notify_replicas:
            if pending is None:
                self.metadata_only.add(tp)
        elif self.metadata_only:
            self.metadata_only.discard(tp)
        return new

    def leader_epoch_after_bump(self, tp: TopicPartition) -> int:
        """The leader epoch the partition has once this plan bumps it."""
        base = self.base_states.get(tp)
        return 0 if base is None or tp in self.created else base.leader_epoch + 1

    def _create(self, tp: TopicPartition, leader: int, isr: tuple[int, ...], elr: tuple[int, ...]) -> LeaderAndIsr:
        if tp not in self.created:
            target = PartitionState.OFFLINE if leader == NO_LEADER else PartitionState.ONLINE
            check_partition_transition(tp, self.partition_state(tp), target)
            self.created.add(tp)
        return LeaderAndIsr(leader, 0, isr, self.controller_epoch, 0, -1, elr)

    # --- assignments, topics, deletions, reassignments -----------------------------

    def set_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """Change a known partition's assignment; the plan rewrites its topic znode."""
        assert tp in self.base_assignments or tp in self.pending_assignments, f"{tp} is unknown"
        self.pending_assignments[tp] = assignment
        self._assignment_topics[tp.topic] = None

    def learn_partitions(self, topic: str, assignment: Mapping[int, ReplicaAssignment]) -> None:
        """Partitions the gateway already wrote to ZooKeeper (NON_EXISTENT -> NEW)."""
        for partition, replica_assignment in assignment.items():
            tp = TopicPartition(topic, partition)
            check_partition_transition(tp, self.partition_state(tp), PartitionState.NEW)
            self.pending_assignments[tp] = replica_assignment
        self._state_updates.append(LearnPartitions(topic, dict(assignment)))

    def set_config(self, topic: str, config: TopicElectionConfig) -> None:
        self._configs[topic] = config
        self._state_updates.append(SetTopicConfig(topic, config))

    def set_deletion_pending(self, topic: str, pending: frozenset[tuple[int, int]]) -> None:
        self.pending_deleting[topic] = pending
        self._state_updates.append(SetDeletionPending(topic, pending))

    def delete_topic(self, topic: str) -> None:
        """Remove the topic's znodes; its partitions go OFFLINE -> NON_EXISTENT."""
        partitions = self.partitions_of_topic(topic)
        for tp in partitions:
            check_partition_transition(tp, self.partition_state(tp), PartitionState.NON_EXISTENT)
        self._offline_delta -= sum(
            1 for tp in partitions if (s := self.state_of(tp)) is not None and s.leader == NO_LEADER)
        self.pending_deleting[topic] = None
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
        self.live_changed = True
        self._state_updates.append(SetLiveBrokers(dict(live)))
        self.live = live
        self.brokers_min_isr = lowest_default(live)
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
        self.notified[tp] = None

    def start_replica(self, tp: TopicPartition, broker_id: int) -> None:
        """A replica added by a reassignment: LeaderAndIsr with ``is_new``."""
        self.new_replicas.add((tp, broker_id))
        self.notified[tp] = None

    def stop_replica(self, tp: TopicPartition, broker_id: int, *, delete: bool, leader_epoch: int) -> None:
        """StopReplica to a live broker; checks ONLINE/OFFLINE -> OFFLINE (-> DELETION_STARTED)."""
        if broker_id not in self.live:
            return
        current = self.replica_state(tp, broker_id)
        if current is not ReplicaState.DELETION_STARTED:
            check_replica_transition(tp, broker_id, current, ReplicaState.OFFLINE)
            if delete:
                check_replica_transition(tp, broker_id, ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED)
        self.stops.setdefault(broker_id, {})[tp] = StopReplicaPartition(tp, leader_epoch, delete)
        self.stopped.add((tp, broker_id))

    def init_broker(self, broker_id: int) -> None:
        """Send the broker an INIT LeaderAndIsr with all its replicas, and full metadata."""
        self.init_brokers.add(broker_id)
        self.full_metadata_brokers.add(broker_id)

    def topic_deleted_in_metadata(self, topic: str) -> None:
        self.deleted_topics.append(topic)

    def answer_once_leaderships_moved(self, stopping_broker: int) -> None:
        """Answer the RPC once the brokers taking over this broker's leaderships have
        answered, not every broker (a controlled shutdown; ``sequencing.py``)."""
        self._stopping_broker = stopping_broker

    # --- finishing -----------------------------------------------------------------

    def finish(self) -> Plan:
        decisions: dict[TopicPartition, PartitionDecision] = {}
        leader_and_isr, changed = leader_and_isr_requests(self, decisions)
        requests = Send(REQUESTS, leader_and_isr, update_metadata_requests(self, decisions, changed),
                        stop_replica_requests(self))
        return Plan(
            steps=plan_steps(self._zk_writes(), requests, self.reply, base=self.base, live=self.live,
                             shutting_down=self.shutting_down, changed=changed,
                             stopping_broker=self._stopping_broker),
            state_updates=tuple(self._state_updates),
            follow_ups=tuple(self.follow_ups),
            metrics=PlanMetrics(
                leader_elections=self.leader_elections,
                unclean_leader_elections=self.unclean_leader_elections,
                lossy_leader_elections=tuple(self.lossy_leader_elections),
                unclean_partitions=tuple(self.unclean_partitions),
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
        created = self.created
        base_states = self.base_states
        writes: list[ZkWrite] = [
            CreatePartitionState(tp, state) if tp in created
            else SetPartitionState(tp, state, base_states[tp].partition_epoch)
            for tp, state in self.pending_states.items()
        ]
        for topic in self._assignment_topics:
            assignment = {tp.partition: self.assignment_of(tp) for tp in self.partitions_of_topic(topic)}
            writes.append(SetAssignment(topic, assignment))
        if self._cleared_requests:
            writes.append(ClearReassignment(tuple(self._cleared_requests)))
        writes += self._other_writes
        return tuple(writes)
