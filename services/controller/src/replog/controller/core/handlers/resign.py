"""A running broker gives up leadership of some partitions: ControlledShutdown naming them (issue 40).

Theory of operation
-------------------
A leader's scrubber found a damaged rolled segment.  The leader serves nothing that fails its
check, but a follower holding the same records intact is the better leader, and only as a follower
can the damaged replica cut its log and fetch the records again (``maintenance/scrubber.py``).  So the
broker sends ControlledShutdown with ``partitions`` set; the epoch fencing is
``on_controlled_shutdown``'s, and then, for each named partition:

* the broker leads it and another ISR member is alive and not shutting down: the
  controlled-shutdown election picks it (the broker itself excluded) and the new ISR drops the
  broker.  The broker gets LeaderAndIsr as a follower of the new leader (not StopReplica: it keeps
  the replica), fetches, and rejoins the ISR through the new leader's usual expansion;
* nobody else can lead it (one replica, or no other live ISR member): it is listed in the reply's
  ``remaining`` and the broker keeps leading it;
* the broker does not lead it, or the topic is being deleted: nothing (a repeat is harmless).

Unlike a shutdown the broker is not marked shutting down: it stays eligible for every election and
ISR.  The answer waits for the brokers taking over the leaderships, as a shutdown's does
(``sequencing.py``), so once it is NONE clients already find the new leaders.
"""

from __future__ import annotations

from collections.abc import Iterable

from replog.common.core.partitions import TopicPartition

from ..builder import PlanBuilder
from ..election import controlled_shutdown_leader
from ..errors import ErrorCode
from ..plan import ControlledShutdownReply


def resign_leaderships(b: PlanBuilder, broker_id: int, partitions: Iterable[TopicPartition]) -> None:
    """Move leadership of the named partitions off `broker_id`, which keeps running."""
    b.answer_once_leaderships_moved(broker_id)
    held = b.base.partitions_by_broker.get(broker_id, ())
    remaining: list[TopicPartition] = []
    for tp in sorted(set(partitions)):
        if tp not in held or b.is_deleting(tp.topic):
            continue
        state = b.state_of(tp)
        if state is None or state.leader != broker_id:
            continue
        if not _hand_over(b, tp, broker_id):
            remaining.append(tp)
    b.reply = ControlledShutdownReply(ErrorCode.NONE, "", tuple(remaining))


def _hand_over(b: PlanBuilder, tp: TopicPartition, broker_id: int) -> bool:
    """Elect another ISR member and leave the ISR; False when nobody else can lead."""
    state = b.state_of(tp)
    replicas = b.assignment_of(tp).replicas
    leader = controlled_shutdown_leader(replicas, state.isr, b.live, b.shutting_down | {broker_id})
    if leader is None:
        return False
    b.leader_elections += 1
    b.isr_shrinks += 1
    b.write(tp, leader, tuple(x for x in state.isr if x != broker_id))
    return True
