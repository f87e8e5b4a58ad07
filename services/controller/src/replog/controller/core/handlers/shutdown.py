"""ControlledShutdown: move leadership off a stopping broker first (docs/operations.md, "Controlled shutdown").

Theory of operation
-------------------
Kafka's ``doControlledShutdown``.  A registered broker asking to stop (with its
current ``broker_epoch``, which it must give: without it any caller could
drain any broker's leaderships) is marked *shutting down* -- from now
on no election picks it and no ISR may add it -- and, for each partition it holds:

* it leads and the partition is replicated: the controlled-shutdown election
  picks the first ISR member that is alive and not shutting down; the new ISR
  drops every shutting-down broker.  With no such member the broker keeps the
  leadership and the partition is listed in the reply's ``remaining``;
* it follows: it leaves the ISR (unless it is the only member left) and gets
  StopReplica(delete=False) so it stops fetching and cannot rejoin.

Leaders that moved get LeaderAndIsr as usual (the stopping broker becomes a
follower, so clients see only retriable NOT_LEADER).  The answer waits only
for the brokers taking over the leaderships (``sequencing.py``).  The broker
repeats the request until ``remaining`` is empty or it gives up; repeating is
harmless.  Partitions with one replica are never "remaining": nothing can take
them over.
A broker stops being "shutting down" when its registration disappears.

A request naming ``partitions`` is not a shutdown: after the same fencing, the broker
gives up leadership of just those and keeps running (``resign.py``).
"""

from __future__ import annotations

from replog.common.core.partitions import TopicPartition

from ..builder import PlanBuilder
from ..election import controlled_shutdown_leader
from ..errors import ErrorCode
from ..events import ControlledShutdownRequested
from ..plan import ControlledShutdownReply
from .resign import resign_leaderships


def on_controlled_shutdown(b: PlanBuilder, event: ControlledShutdownRequested) -> None:
    broker_id = event.broker_id
    info = b.live.get(broker_id)
    if info is None:
        b.reply = ControlledShutdownReply(
            ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not registered", ())
        return
    if event.broker_epoch != info.broker_epoch:
        b.reply = ControlledShutdownReply(
            ErrorCode.STALE_BROKER_EPOCH,
            f"broker epoch {event.broker_epoch} is not the registered {info.broker_epoch}", ())
        return
    if event.partitions:  # the broker keeps running and gives up just these leaderships (resign.py)
        resign_leaderships(b, broker_id, event.partitions)
        return
    if broker_id not in b.shutting_down:
        b.set_shutting_down(b.shutting_down | {broker_id})
    b.answer_once_leaderships_moved(broker_id)
    remaining: list[TopicPartition] = []
    for tp in b.base.partitions_by_broker.get(broker_id, ()):
        if b.is_deleting(tp.topic):
            continue
        state = b.state_of(tp)
        if state is None:
            continue
        if state.leader == broker_id:
            if not _move_leadership(b, tp):
                remaining.append(tp)
        else:
            _leave_as_follower(b, tp, broker_id)
    b.reply = ControlledShutdownReply(ErrorCode.NONE, "", tuple(remaining))


def _move_leadership(b: PlanBuilder, tp: TopicPartition) -> bool:
    """Move the leader away; False when the partition is replicated but nobody can take it."""
    state = b.state_of(tp)
    replicas = b.assignment_of(tp).replicas
    if len(replicas) <= 1:
        return True
    leader = controlled_shutdown_leader(replicas, state.isr, b.live, b.shutting_down)
    if leader is None:
        return False
    b.leader_elections += 1
    new_isr = tuple(x for x in state.isr if x not in b.shutting_down)
    if len(new_isr) < len(state.isr):
        b.isr_shrinks += 1
    b.write(tp, leader, new_isr)
    return True


def _leave_as_follower(b: PlanBuilder, tp: TopicPartition, broker_id: int) -> None:
    state = b.state_of(tp)
    if broker_id in state.isr and len(state.isr) > 1:
        b.isr_shrinks += 1
        state = b.write(tp, state.leader, tuple(x for x in state.isr if x != broker_id))
    b.stop_replica(tp, broker_id, delete=False, leader_epoch=state.leader_epoch)
