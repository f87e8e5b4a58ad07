"""Topic deletion: stop and delete every replica, then remove the znodes (seed B.2).

Theory of operation
-------------------
A topic marked under ``/admin/delete_topics`` is deleted in two steps:

1. start: its partitions go OFFLINE (brokers learn from UpdateMetadata that the
   topic is gone), any reassignment of them is abandoned, and every replica on
   a live broker gets StopReplica(delete=True) at the partition's current leader
   epoch (brokers refuse a stop at "any epoch", -1).  The controller records those
   ``(partition, broker)`` replicas as *pending*.
2. finish: each acknowledged replica (``TopicDeletionReplicaStopped``) leaves
   the pending set; so does every replica on a broker that dies.  When nothing
   is pending the plan deletes the topic's znodes.  A replica on a dead broker
   is never waited for: when that broker returns, its INIT LeaderAndIsr does
   not list the topic and the broker deletes the replica itself.

A replica whose deletion failed stays pending until its broker restarts (it
is then dropped as dead) or a new controller takes over (which starts every
marked deletion again) -- Kafka's "ineligible, retry later". A StopReplica
lost in transit (say it outlasted its deadline) is sent again with the resync
that follows any failed request to a broker (``resend_stops``): the broker may
have deleted them and its answer been lost, and a replica it no longer hosts is
answered as stopped. Without that the deletion waited for a restart or a
failover that might never come (docs/perf/deletion-resend.md).  Deletion is thus
resumable: after a failover the topic is still under ``/admin/delete_topics``
and ``Startup`` restarts step 1.  While a topic is being deleted no election,
ISR change or reassignment touches it.
"""

from __future__ import annotations

from replog.common.core.partitions import TopicPartition

from ..builder import PlanBuilder
from ..events import TopicDeletionReplicaStopped, TopicDeletionRequested
from ..states import PartitionState, ReplicaState, check_partition_transition, check_replica_transition

def on_topic_deletion_requested(b: PlanBuilder, event: TopicDeletionRequested) -> None:
    for topic in sorted(set(event.topics)):
        if not b.is_deleting(topic):
            start_deletion(b, topic)


def start_deletion(b: PlanBuilder, topic: str) -> None:
    partitions = b.partitions_of_topic(topic)
    abandoned = [tp for tp in partitions if b.reassignment_of(tp) is not None]
    for tp in abandoned:
        b.set_reassignment(tp, None)
        b.clear_reassignment_request(tp)
    pending: set[tuple[int, int]] = set()
    for tp in partitions:
        check_partition_transition(tp, b.partition_state(tp), PartitionState.OFFLINE)
        for broker_id in b.assignment_of(tp).replicas:
            if broker_id in b.live:
                b.stop_replica(tp, broker_id, delete=True, leader_epoch=current_leader_epoch(b, tp))
                pending.add((tp.partition, broker_id))
    b.set_deletion_pending(topic, frozenset(pending))
    b.topic_deleted_in_metadata(topic)
    if not pending:
        b.delete_topic(topic)


def on_replica_stopped(b: PlanBuilder, event: TopicDeletionReplicaStopped) -> None:
    acknowledged: dict[str, set[tuple[int, int]]] = {}
    for tp in event.stopped:
        pending = b.deletion_pending(tp.topic)
        replica = (tp.partition, event.broker_id)
        if pending is None or replica not in pending:
            continue  # not awaited (a late or repeated answer)
        check_replica_transition(tp, event.broker_id, ReplicaState.DELETION_STARTED,
                                 ReplicaState.DELETION_SUCCESSFUL)
        acknowledged.setdefault(tp.topic, set()).add(replica)
    for topic in sorted(acknowledged):
        _set_pending(b, topic, b.deletion_pending(topic) - acknowledged[topic])


def resend_stops(b: PlanBuilder, broker_id: int) -> None:
    """StopReplica(delete) again for every replica on `broker_id` whose deletion is still pending."""
    for topic in b.deleting_topics():
        for partition, holder in sorted(b.deletion_pending(topic) or ()):
            if holder == broker_id:
                tp = TopicPartition(topic, partition)
                b.stop_replica(tp, broker_id, delete=True, leader_epoch=current_leader_epoch(b, tp))


def current_leader_epoch(b: PlanBuilder, tp: TopicPartition) -> int:
    """The epoch a stop names: the partition's, which is at least what any replica of it holds (a broker
    learns leader epochs only from this controller's state). A partition never given a state has had no
    LeaderAndIsr, so its replicas hold none and 0 stops them."""
    state = b.state_of(tp)
    return 0 if state is None else state.leader_epoch


def forget_dead_replicas(b: PlanBuilder, dead: set[int]) -> None:
    """Stop waiting for replicas on dead brokers; finish the deletions that were only waiting for them."""
    for topic in b.deleting_topics():
        pending = b.deletion_pending(topic)
        remaining = frozenset(r for r in pending if r[1] not in dead)
        if remaining != pending:
            _set_pending(b, topic, remaining)


def _set_pending(b: PlanBuilder, topic: str, pending: frozenset[tuple[int, int]]) -> None:
    if pending:
        b.set_deletion_pending(topic, pending)
    else:
        b.delete_topic(topic)

