"""Who hears what: a plan's LeaderAndIsr, UpdateMetadata and StopReplica requests.

Theory of operation
-------------------
Built from a :class:`~.builder.PlanBuilder`'s pending changes when it finishes
the plan.  The rules every plan keeps:

* one LeaderAndIsr per live broker, covering every partition the plan changed
  on it (all its replicas when ``init``), and none for a replica the plan stops;
* an ISR-only change (same leader, same leader epoch, same assignment, e.g. a
  dead follower leaving the ISR) goes to the leader alone: the leader is the one
  replica that acts on an ISR (its HW, acks=all).  Followers learn it from
  UpdateMetadata, as they learn the leader's own AlterPartition changes (Kafka
  has done the same since KIP-497).  Telling every replica kept the followers
  busy during the moved partitions' first replication round
  (docs/perf/isr-only-changes.md);
* UpdateMetadata goes to every live broker: the whole cluster to brokers that
  need it (INIT), the changed partitions to the others;
* one StopReplica per broker.

Speed: a broker failure may change 100K partitions, so the loops do a few dict
operations per partition and build each partition's decision once, shared by
every broker that hears it.  Changed partitions come in write order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replog.common.core.partitions import NO_LEADER, TopicPartition

from .plan import LeaderAndIsrRequest, PartitionDecision, StopReplicaRequest, UpdateMetadata

if TYPE_CHECKING:
    from .builder import PlanBuilder


def leader_and_isr_requests(
    builder: PlanBuilder, decisions: dict[TopicPartition, PartitionDecision]
) -> tuple[tuple[LeaderAndIsrRequest, ...], list[PartitionDecision]]:
    """One request per broker, and the changed partitions (for UpdateMetadata)."""
    live = builder.live
    stopped = builder.stopped
    new_replicas = builder.new_replicas
    init = builder.init_brokers
    # INIT brokers need de-duplication (their replicas may also have changed);
    # for the others every partition comes once, so a list will do.
    per_init: dict[int, dict[TopicPartition, PartitionDecision]] = {b: {} for b in sorted(init)}
    # per_broker holds only live brokers, so a lookup miss means dead (or INIT).
    per_broker: dict[int, list[PartitionDecision]] = {b: [] for b in live if b not in init}
    for broker_id, entries in per_init.items():
        _init_entries(builder, broker_id, entries, decisions)
    changed: list[PartitionDecision] = []
    metadata_only = builder.metadata_only
    created = builder.created
    pending_assignments = builder.pending_assignments
    base_assignments = builder.base_assignments
    keep = bool(per_init or builder.full_metadata_brokers)  # decisions reused below
    special = bool(stopped or new_replicas or per_init)
    recipients_of: dict[tuple[int, ...], list[list[PartitionDecision]]] = {}
    base_states = builder.base_states
    notify = builder.notified
    # Written partitions first (in write order), then those only re-sent.
    told = builder.pending_states.items()
    if notify:
        told = [*told, *((tp, builder.state_of(tp)) for tp in notify if tp not in builder.pending_states)]
    for tp, state in told:
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
            # ISR-only: the leader alone hears (module docstring); an INIT leader has it already.
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
    builder: PlanBuilder, broker_id: int, entries: dict[TopicPartition, PartitionDecision],
    decisions: dict[TopicPartition, PartitionDecision],
) -> None:
    """Every replica the broker holds, for its INIT request (deleted topics left out)."""
    held = builder.base.partitions_by_broker.get(broker_id, ())
    if not (builder.pending_deleting or builder.base_deleting or builder.stopped or builder.pending_assignments):
        # The common case (a controller failover): every partition the index names is the
        # broker's and told as it stands. The same decisions serve every broker.
        known = decisions.get
        for tp in held:
            decision = known(tp) or _decision(builder, tp, decisions)
            if decision is not None:
                entries[tp] = decision
        return
    for tp in held:
        if builder.is_deleting(tp.topic) or (tp, broker_id) in builder.stopped:
            continue
        assignment = builder.assignment_of(tp)
        if assignment is None or broker_id not in assignment.replicas:
            continue
        decision = _decision(builder, tp, decisions)
        if decision is not None:
            entries[tp] = decision


def update_metadata_requests(
    builder: PlanBuilder, decisions: dict[TopicPartition, PartitionDecision], changed: list[PartitionDecision]
) -> tuple[UpdateMetadata, ...]:
    live_brokers = tuple(builder.live[b] for b in sorted(builder.live))
    requests: list[UpdateMetadata] = []
    full_to = tuple(sorted(b for b in builder.full_metadata_brokers if b in builder.live))
    if full_to:
        every = []
        partitions = {**dict.fromkeys(builder.base_states), **dict.fromkeys(builder.pending_states)}
        deleting = builder.pending_deleting or builder.base_deleting
        known = decisions.get
        for tp in partitions:
            if not deleting or not builder.is_deleting(tp.topic):
                decision = known(tp) or _decision(builder, tp, decisions)
                if decision is not None:
                    every.append(decision)
        requests.append(UpdateMetadata(full_to, live_brokers, tuple(every), (), True))
    rest = tuple(sorted(b for b in builder.live if b not in builder.full_metadata_brokers))
    if rest and (changed or builder.deleted_topics or builder.live_changed):
        requests.append(UpdateMetadata(rest, live_brokers, tuple(changed), tuple(builder.deleted_topics), False))
    return tuple(requests)


def stop_replica_requests(builder: PlanBuilder) -> tuple[StopReplicaRequest, ...]:
    return tuple(
        StopReplicaRequest(b, builder.live[b].broker_epoch, tuple(stops.values()))
        for b, stops in sorted(builder.stops.items())
    )


def _decision(
    builder: PlanBuilder, tp: TopicPartition, decisions: dict[TopicPartition, PartitionDecision],
) -> PartitionDecision | None:
    decision = decisions.get(tp)
    if decision is None:
        state = builder.state_of(tp)
        if state is None:
            return None  # a NEW partition: nothing to tell yet
        decision = PartitionDecision(tp, state, builder.assignment_of(tp), tp in builder.created)
        decisions[tp] = decision
    return decision
