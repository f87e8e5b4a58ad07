"""Requested elections and the automatic leader rebalance (docs/operations.md, "Preferred leader election").

Theory of operation
-------------------
Preferred election (operator request, or the rebalance below): for each
partition, move leadership to the preferred (first assigned) replica if it is
eligible and in the ISR.  Answers per partition: NONE (moved),
ELECTION_NOT_NEEDED (already there), PREFERRED_LEADER_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_IN_PROGRESS, REASSIGNMENT_IN_PROGRESS
(a running reassignment decides the leader itself, as in Kafka).  The ISR is
unchanged; the leader epoch rises.

Unclean election (KIP-460, operator request): for a partition with no live
leader, the offline election with unclean allowed whatever the topic says --
clean if any ISR member is eligible, otherwise the first eligible replica, with
possible data loss.  ELECTION_NOT_NEEDED when a live leader exists,
ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is eligible.

Auto rebalance (``AutoRebalanceTick``, at most once per configured interval):
for each broker, imbalance = (partitions whose preferred replica is that broker
but that another broker leads) / (partitions whose preferred replica is that
broker), over partitions that have a state and are neither being deleted nor
reassigned.  When it is above ``leader_imbalance_per_broker_percentage`` percent
and the broker is eligible, each of those partitions gets a preferred election.
O(partitions) per tick, like Kafka's.
"""

from __future__ import annotations

from replog.common.core.partitions import NO_LEADER, TopicPartition

from ..builder import PlanBuilder
from ..election import preferred_leader
from ..errors import ErrorCode
from ..events import AutoRebalanceTick, PreferredElectionRequested, UncleanElectionRequested
from ..plan import DeleteAdminRequest, PartitionResult, PartitionResultsReply, SetLastRebalanceCheck
from .leadership import restore_leadership


def on_preferred_election(b: PlanBuilder, event: PreferredElectionRequested) -> None:
    partitions = event.partitions if event.partitions is not None else tuple(b.base.assignments)
    results = tuple(PartitionResult(tp, *elect_preferred(b, tp)) for tp in partitions)
    if event.admin_request:
        b.zk_write(DeleteAdminRequest(event.admin_request))
    b.reply = PartitionResultsReply(results)


def on_unclean_election(b: PlanBuilder, event: UncleanElectionRequested) -> None:
    results = tuple(PartitionResult(tp, *_elect_unclean(b, tp)) for tp in event.partitions)
    if event.admin_request:
        b.zk_write(DeleteAdminRequest(event.admin_request))
    b.reply = PartitionResultsReply(results)


def on_auto_rebalance(b: PlanBuilder, event: AutoRebalanceTick) -> None:
    settings = b.base.settings
    last = b.base.last_rebalance_check_ms
    if not settings.auto_leader_rebalance_enable:
        return
    if last is not None and event.now_ms - last < settings.leader_imbalance_check_interval_ms:
        return
    b.state_update(SetLastRebalanceCheck(event.now_ms))
    preferred_count: dict[int, int] = {}
    not_led: dict[int, list[TopicPartition]] = {}
    states = b.base.partition_states
    deleting = b.base.topics_being_deleted
    reassigning = b.base.reassignments
    for tp, assignment in b.base.assignments.items():
        state = states.get(tp)
        if state is None or tp in reassigning or (deleting and tp.topic in deleting):
            continue
        preferred = assignment.replicas[0]
        preferred_count[preferred] = preferred_count.get(preferred, 0) + 1
        if state.leader != preferred:
            not_led.setdefault(preferred, []).append(tp)
    threshold = settings.leader_imbalance_per_broker_percentage
    for broker_id in sorted(not_led):
        if broker_id not in b.eligible:
            continue
        if len(not_led[broker_id]) * 100 > threshold * preferred_count[broker_id]:
            for tp in not_led[broker_id]:
                elect_preferred(b, tp)


def elect_preferred(b: PlanBuilder, tp: TopicPartition) -> tuple[ErrorCode, str]:
    assignment = b.assignment_of(tp)
    if assignment is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist"
    if b.is_deleting(tp.topic):
        return ErrorCode.TOPIC_DELETION_IN_PROGRESS, f"topic {tp.topic} is being deleted"
    if b.reassignment_of(tp) is not None:
        return ErrorCode.REASSIGNMENT_IN_PROGRESS, f"{tp} is being reassigned"
    state = b.state_of(tp)
    preferred = assignment.replicas[0]
    if state is not None and state.leader == preferred:
        return ErrorCode.ELECTION_NOT_NEEDED, f"broker {preferred} already leads {tp}"
    leader = None if state is None else preferred_leader(assignment.replicas, state.isr, b.eligible)
    if leader is None:
        return (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"preferred replica {preferred} of {tp} is not alive or not in the ISR")
    b.leader_elections += 1
    b.write(tp, leader, state.isr)
    return ErrorCode.NONE, ""


def _elect_unclean(b: PlanBuilder, tp: TopicPartition) -> tuple[ErrorCode, str]:
    if b.assignment_of(tp) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist"
    if b.is_deleting(tp.topic):
        return ErrorCode.TOPIC_DELETION_IN_PROGRESS, f"topic {tp.topic} is being deleted"
    state = b.state_of(tp)
    if state is not None and state.leader != NO_LEADER and state.leader in b.live:
        return ErrorCode.ELECTION_NOT_NEEDED, f"{tp} has a live leader, broker {state.leader}"
    after = restore_leadership(b, tp, force_unclean=True)
    if after is None or after.leader == NO_LEADER:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"no replica of {tp} is eligible to lead"
    return ErrorCode.NONE, ""
