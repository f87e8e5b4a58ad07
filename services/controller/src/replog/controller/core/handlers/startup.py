"""Startup: a controller took its seat and read the cluster (seed D; docs/architecture.md, "Who holds the seat").

Theory of operation
-------------------
The plan's first update loads the snapshot as the new state; everything else is
decided against that state, in the seed's order with its gaps filled:

1. every partition gets a live leader and a live ISR where it can (dead
   brokers leave ISRs, dead or missing leaders are elected; NEW partitions
   start) -- the snapshot may be minutes old, and brokers may have died while
   no controller was watching;
2. every topic still under ``/admin/delete_topics`` starts deleting again;
3. reassignments resume: those recorded in topic znodes (adding/removing
   replicas) are tracked again, pending requests start, and any whose targets
   are all in the ISR complete;
4. every live broker gets an INIT LeaderAndIsr with all its replicas and full
   metadata, since decisions may have been lost with the previous controller.

Shutting-down marks are not in ZooKeeper: a broker in controlled shutdown
repeats its request to the new controller.
"""

from __future__ import annotations

from ..builder import PlanBuilder
from ..events import Startup
from ..model import ControllerState, ReplicaAssignment
from ..plan import LoadState
from .deletion import start_deletion
from .leadership import restore_leadership
from .reassignment import apply_requests, maybe_complete


def startup_builder(state: ControllerState, event: Startup) -> PlanBuilder:
    snapshot = event.snapshot
    loaded = ControllerState.build(
        controller_id=snapshot.controller_id,
        controller_epoch=snapshot.controller_epoch,
        live_brokers=snapshot.live_brokers,
        assignments=snapshot.assignments,
        partition_states=snapshot.partition_states,
        topic_configs=snapshot.topic_configs,
        reassignments={tp: a.target for tp, a in snapshot.assignments.items() if a.is_reassigning},
        settings=state.settings,
    )
    b = PlanBuilder(loaded)
    b.state_update(LoadState(loaded))
    _resume_half_written_reassignments(b, loaded)
    deleting = {t for t in snapshot.topics_being_deleted if t in loaded.partitions_by_topic}
    live = loaded.live_brokers
    healthy: dict[tuple[int, tuple[int, ...]], bool] = {}  # (leader, ISR) -> all alive; few distinct pairs
    states = loaded.partition_states
    for tp in loaded.assignments:
        if deleting and tp.topic in deleting:
            continue
        current = states.get(tp)
        if current is None:
            restore_leadership(b, tp)
            continue
        key = (current.leader, current.isr)
        ok = healthy.get(key)
        if ok is None:
            ok = healthy[key] = current.leader in live and all(x in live for x in current.isr)
        if not ok:
            restore_leadership(b, tp)
    for topic in sorted(snapshot.topics_being_deleted):
        if topic in deleting:
            start_deletion(b, topic)
        else:
            b.delete_topic(topic)  # only the request znode is left
    apply_requests(b, snapshot.reassignment_requests)  # those of deleted topics are refused and cleared
    for tp in b.reassigning_partitions():
        if tp.topic not in deleting:
            maybe_complete(b, tp)
    for broker_id in sorted(live):
        b.init_broker(broker_id)
    return b


def _resume_half_written_reassignments(b: PlanBuilder, loaded: ControllerState) -> None:
    """Put back replicas an ISR or ELR still names but the assignment has already dropped.

    A plan's writes go out in several ``multi``s; if one failed after a later
    one landed (a reassignment's AR := RAR without its ISR := ISR ∩ RAR, or
    without the ELR's cut, ``keep_elr_inside``), the ISR or ELR names replicas
    outside the assignment.  They are re-added as *removing* replicas, which
    makes it a reassignment in progress again; it then finishes the normal way.
    Nothing is lost and no ISR is trusted less.
    """
    inside: dict[tuple[tuple[int, ...], tuple[int, ...]], bool] = {}  # (ISR, replicas) -> ISR within; few pairs
    for tp, state in loaded.partition_states.items():
        assignment = loaded.assignments[tp]
        key = (state.isr, assignment.replicas)
        ok = inside.get(key)
        if ok is None:
            ok = inside[key] = all(x in assignment.replicas for x in state.isr)
        if ok and all(x in assignment.replicas for x in state.elr):
            continue
        strays = tuple(x for x in (*state.isr, *state.elr) if x not in assignment.replicas)
        if strays:
            b.set_assignment(tp, ReplicaAssignment(
                assignment.replicas + strays, assignment.adding, assignment.removing + strays))
            b.set_reassignment(tp, assignment.target)
