"""Shared moves on one partition: initialise it, and restore a live leader and ISR.

Theory of operation
-------------------
Seed A step 3 / seed B ``init_leaders`` / docs/architecture.md, "Control flow", with the seed's holes closed:

* A partition whose leader is alive keeps it; dead brokers leave its ISR.
* A partition whose leader is dead (or ``NO_LEADER``) gets the offline election
  (``election.offline_partition_leader``): clean first, skipping ISR members whose
  registration says they lost committed records of it (docs/durability.md) or
  started uncleanly while another member -- of the ISR, else of the ELR
  (``elr.py``) -- can lead; a leader from the ELR leads an ISR of itself alone, and
  the ISR members passed over join no ELR; unclean only where the topic allows it
  (or an operator forces it), recorded in the metrics and with the ISR reset to
  the new leader alone and the ELR emptied -- an ISR member that lost records
  comes first there, and is also recorded as a lossy election (metrics and the
  controller's log): every ISR member lost records, so the partition stays
  offline without it.
* A broker that registers after an unclean start, or with lost records of the
  partition, leaves its ELR (``forget_unclean_replicas``).
* With nobody to elect, the leader is ``NO_LEADER`` (offline) and the ISR keeps
  its live members -- or, when none is alive, exactly one member, so it is never
  empty.  We keep the old leader if it was in the ISR (it holds every committed
  record), else the first member: Kafka ends the same way (its ISR shrinks one
  dead broker at a time but never below one), and when that broker returns it
  is elected cleanly.
* A NEW partition (assigned, no state znode) gets leader = first eligible
  replica and ISR = every eligible replica, once any replica is eligible.

The builder bumps ``leader_epoch`` on every leader change and ``partition_epoch``
on every write.
"""

from __future__ import annotations

from replog.common.core.partitions import NO_LEADER, TopicPartition

from ..builder import PlanBuilder
from ..election import offline_partition_leader
from ..elr import next_elr, without
from ..model import BrokerInfo, LeaderAndIsr


def initialize_partition(b: PlanBuilder, tp: TopicPartition) -> LeaderAndIsr | None:
    """Create the state of a NEW partition; ``None`` while no replica is eligible."""
    assignment = b.assignment_of(tp)
    assert assignment is not None, f"{tp} has no assignment"
    eligible, live = b.eligible, b.live
    candidates = tuple([x for x in assignment.replicas if x in eligible and live[x].serves(tp)])
    if not candidates:
        return None
    b.leader_elections += 1
    return b.write(tp, candidates[0], candidates)


def restore_leadership(b: PlanBuilder, tp: TopicPartition, *, force_unclean: bool = False) -> LeaderAndIsr | None:
    """Give the partition a live leader and a live ISR if it can have them.

    Returns the partition's state afterwards (``None`` for a NEW partition that
    still cannot start).
    """
    state = b.state_of(tp)
    if state is None:
        return initialize_partition(b, tp)
    live = b.live
    isr = state.isr
    # a replica in an offline log directory counts as dead here (handlers/log_dirs.py)
    live_isr = tuple([x for x in isr if x in live and live[x].serves(tp)])
    leader = state.leader
    if leader != NO_LEADER and leader in live and live[leader].serves(tp):
        if len(live_isr) == len(isr):
            return state
        b.isr_shrinks += 1
        return b.write(tp, leader, live_isr)
    assignment = b.assignment_of(tp)
    unclean_allowed = force_unclean or b.config_of(tp.topic).unclean_leader_election
    lost = [broker for broker in (*isr, *state.elr) if broker in live and tp in live[broker].lost_partitions]
    unclean_started = [broker for broker in isr if broker in live and live[broker].unclean_start]
    eligible = b.eligible
    if any(x in live and not live[x].serves(tp) for x in assignment.replicas):
        eligible = frozenset(x for x in eligible if live[x].serves(tp))
    new_leader, unclean, lossy, from_elr = offline_partition_leader(
        assignment.replicas, isr, eligible, unclean_allowed, lost, state.elr, unclean_started)
    if new_leader is None:
        return b.write(tp, NO_LEADER, live_isr or keep_one(state))
    b.leader_elections += 1
    if lossy:
        b.lossy_leader_elections.append((tp, new_leader))
    if unclean:
        b.unclean_leader_elections += 1
        b.unclean_partitions.append(tp)
        return b.write(tp, new_leader, (new_leader,), unclean=True)
    if from_elr:
        elr = next_elr(isr_before=isr, elr_before=state.elr, isr_after=(new_leader,),
                       min_isr=b.min_isr_of(tp.topic), replicas=assignment.replicas)
        return b.write(tp, new_leader, (new_leader,), elr=without(elr, (*lost, *unclean_started)))
    return b.write(tp, new_leader, live_isr)


def forget_unclean_replicas(b: PlanBuilder, info: BrokerInfo) -> None:
    """Take a broker that just registered out of every ELR if it started uncleanly, and out of the ELR
    of each partition it lost records of: its log may lack committed records (KIP-966)."""
    deleting = b.base.topics_being_deleted
    for tp in b.base.partitions_by_broker.get(info.broker_id, ()):
        state = b.state_of(tp)
        if state is None or info.broker_id not in state.elr or (deleting and b.is_deleting(tp.topic)):
            continue
        if info.unclean_start or tp in info.lost_partitions:
            b.write(tp, state.leader, state.isr, elr=without(state.elr, (info.broker_id,)))


def keep_elr_inside(b: PlanBuilder, tp: TopicPartition, replicas: tuple[int, ...]) -> None:
    """Before a reassignment drops replicas from the assignment, drop them from the ELR too."""
    state = b.state_of(tp)
    if state is not None and any(x not in replicas for x in state.elr):
        b.write(tp, state.leader, state.isr, elr=tuple(x for x in state.elr if x in replicas))


def keep_one(state: LeaderAndIsr) -> tuple[int, ...]:
    """The single ISR member recorded when no member is alive."""
    if state.leader in state.isr:
        return (state.leader,)
    return state.isr[:1]
