"""GroupService on the broker: protobuf in, the coordinator's domain calls, protobuf out.

Thin: requests are checked and converted by groups/requests.py (a malformed field is
INVALID_ARGUMENT, a bad group id the typed INVALID_GROUP_ID), and every other decision is the
coordinator's. Who may call each method and the ACLs a user needs (docs/acls.md: consume on the
group to take part or commit, and consume on each committed topic; describe to look; delete to
delete) are checked before a handler runs, by the method table (replog.common.security.rules),
which also trims listings to what the user may describe.
"""

from __future__ import annotations

from typing import Callable

import grpc

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.groups import requests as checks
from replog.broker.groups.coordinator import GroupCoordinator
from replog.broker.groups.core.group import Group
from replog.broker.groups.core.model import NO_GENERATION, NO_LEADER_EPOCH, NO_OFFSET, GroupState
from replog.broker.groups.core.placement import group_id_problem, offsets_partition
from replog.broker.groups.offsets_topic import OffsetsTopicCreator
from replog.common import telemetry
from replog.common.core.internal_topics import OFFSETS_TOPIC
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc

_STATES = {state: group_pb2.GroupState.Value("GROUP_STATE_" + state.name) for state in GroupState}


def _tps(pairs) -> list[common_pb2.TopicPartition]:
    return [common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in pairs]


def _error(refusal: Refusal | None) -> dict:
    return {} if refusal is None else {"error_code": int(refusal.code), "error_message": refusal.reason}


class GroupServicer(group_pb2_grpc.GroupServiceServicer):
    def __init__(self, *, coordinator: GroupCoordinator, metadata: MetadataCache, now_ms: Callable[[], int],
                 offsets_topic: OffsetsTopicCreator) -> None:
        self._coordinator = coordinator
        self._offsets_topic = offsets_topic
        self._metadata = metadata
        self._now_ms = now_ms

    @staticmethod
    def _checked(group_id: str) -> Refusal | None:
        """INVALID_GROUP_ID as a value."""
        problem = group_id_problem(group_id)
        return None if problem is None else Refusal(ErrorCode.INVALID_GROUP_ID, problem)

    @staticmethod
    def _bad(context, error: checks.BadRequest):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))

    def FindCoordinator(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.FindCoordinatorResponse(**_error(refusal))
        answer = self._metadata.metadata_response([OFFSETS_TOPIC])
        topic = answer.topics[0]
        if topic.error_code != common_pb2.ERROR_CODE_NONE or not topic.partitions:
            status = self._offsets_topic.ensure({b.broker_id: b.rack or None for b in answer.brokers})
            return group_pb2.FindCoordinatorResponse(**_error(Refusal(ErrorCode.COORDINATOR_NOT_AVAILABLE, status)))
        partition = offsets_partition(request.group_id, len(topic.partitions))
        leader = topic.partitions[partition].leader
        endpoint = next((b for b in answer.brokers if b.broker_id == leader), None)
        if endpoint is None:
            return group_pb2.FindCoordinatorResponse(offsets_partition=partition, **_error(Refusal(
                ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC}-{partition} has no live leader; retry")))
        return group_pb2.FindCoordinatorResponse(coordinator=endpoint, offsets_partition=partition)

    def JoinGroup(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.JoinGroupResponse(member_id=request.member_id, **_error(refusal))
        try:
            join = checks.join_request(request, context.peer())
        except checks.BadRequest as error:
            return self._bad(context, error)
        answer = self._coordinator.join(request.group_id, join,
                                        telemetry.extract_context(context.invocation_metadata()))
        members = [group_pb2.JoinGroupMember(member_id=m, protocol=group_pb2.GroupProtocol(
            name=p.name, topics=p.topics, owned_partitions=_tps(p.owned_partitions), user_data=p.user_data))
            for m, p in answer.members]
        return group_pb2.JoinGroupResponse(
            error_code=int(answer.error), error_message=answer.message, generation_id=answer.generation_id,
            protocol_name=answer.protocol_name, leader_member_id=answer.leader_member_id,
            member_id=answer.member_id, members=members)

    def SyncGroup(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.SyncGroupResponse(**_error(refusal))
        try:
            assignments = checks.sync_assignments(request)
        except checks.BadRequest as error:
            return self._bad(context, error)
        answer = self._coordinator.sync(request.group_id, request.generation_id, request.member_id, assignments,
                                        telemetry.extract_context(context.invocation_metadata()))
        return group_pb2.SyncGroupResponse(
            error_code=int(answer.error), error_message=answer.message,
            assignment=group_pb2.MemberAssignment(member_id=answer.member_id, partitions=_tps(answer.assignment),
                                                  user_data=answer.user_data))

    def Heartbeat(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.HeartbeatResponse(**_error(refusal))
        try:
            checks.member(request.member_id, request.generation_id)
        except checks.BadRequest as error:
            return self._bad(context, error)
        refusal = self._coordinator.heartbeat(request.group_id, request.generation_id, request.member_id)
        return group_pb2.HeartbeatResponse(**_error(refusal))

    def LeaveGroup(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.LeaveGroupResponse(**_error(refusal))
        if not request.member_id:
            return self._bad(context, checks.BadRequest("member_id is empty"))
        return group_pb2.LeaveGroupResponse(**_error(self._coordinator.leave(request.group_id, request.member_id)))

    def OffsetCommit(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.OffsetCommitResponse(**_error(refusal))
        try:
            checks.commit_member(request.member_id, request.generation_id)
            offsets = checks.commit_offsets(request.partitions, self._now_ms())
        except checks.BadRequest as error:
            return self._bad(context, error)
        refusal = self._coordinator.commit(request.group_id, request.generation_id, request.member_id, offsets)
        return self._per_partition(group_pb2.OffsetCommitResponse, offsets, refusal)

    def AlterGroupOffsets(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.AlterGroupOffsetsResponse(**_error(refusal))
        try:
            offsets = checks.commit_offsets(request.partitions, self._now_ms())
        except checks.BadRequest as error:
            return self._bad(context, error)
        refusal = self._coordinator.commit(request.group_id, NO_GENERATION, "", offsets, admin=True)
        return self._per_partition(group_pb2.AlterGroupOffsetsResponse, offsets, refusal)

    @staticmethod
    def _per_partition(response_type, offsets, refusal: Refusal | None):
        if refusal:
            return response_type(**_error(refusal))
        return response_type(partitions=[group_pb2.PartitionResult(topic=tp.topic, partition=tp.partition)
                                         for tp, _ in offsets])

    def OffsetFetch(self, request, context):
        refusal = self._checked(request.group_id)
        if refusal:
            return group_pb2.OffsetFetchResponse(**_error(refusal))
        try:
            tps = checks.fetch_partitions(request)
        except checks.BadRequest as error:
            return self._bad(context, error)
        held = self._coordinator.committed(request.group_id, tps)
        if isinstance(held, Refusal):
            return group_pb2.OffsetFetchResponse(**_error(held))
        offsets = []
        for tp in sorted(set(tps) | set(held)):
            c = held.get(tp)
            offsets.append(group_pb2.CommittedOffset(topic=tp.topic, partition=tp.partition) if c is None else
                           group_pb2.CommittedOffset(topic=tp.topic, partition=tp.partition, offset=c.offset,
                                                     leader_epoch=c.leader_epoch, metadata=c.metadata,
                                                     commit_time_ms=c.commit_time_ms))
            if c is None:
                offsets[-1].offset, offsets[-1].leader_epoch = NO_OFFSET, NO_LEADER_EPOCH
        return group_pb2.OffsetFetchResponse(offsets=offsets)

    def ListGroups(self, request, context):
        listed = []
        for group_id, group in self._coordinator.groups():
            with self._coordinator.described:
                state = group.state if group is not None else GroupState.EMPTY
                protocol_type = group.protocol_type if group is not None else ""
            listed.append(group_pb2.ListedGroup(group_id=group_id, state=_STATES[state], protocol_type=protocol_type))
        return group_pb2.ListGroupsResponse(groups=listed)

    def DescribeGroups(self, request, context):
        try:
            ids = checks.group_ids(request.group_ids)
        except checks.BadRequest as error:
            return self._bad(context, error)
        described = []
        for group_id in ids:
            refusal = self._checked(group_id)
            found = refusal or self._coordinator.describe(group_id)
            if isinstance(found, Refusal):
                described.append(group_pb2.DescribedGroup(group_id=group_id, **_error(found)))
                continue
            described.append(self._described(group_id, found))
        return group_pb2.DescribeGroupsResponse(groups=described)

    def _described(self, group_id: str, group: Group | None) -> group_pb2.DescribedGroup:
        if group is None:
            return group_pb2.DescribedGroup(group_id=group_id, state=group_pb2.GROUP_STATE_EMPTY)
        with self._coordinator.described:
            members = [group_pb2.GroupMemberDescription(
                member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                topics=(m.protocol(group.protocol_name) or m.protocols[0]).topics, assignment=_tps(m.assignment))
                for m in group.members.values()]
            return group_pb2.DescribedGroup(
                group_id=group_id, state=_STATES[group.state], protocol_type=group.protocol_type,
                protocol_name=group.protocol_name, generation_id=group.generation_id,
                leader_member_id=group.leader_member_id, members=members)

    def DeleteGroups(self, request, context):
        try:
            ids = checks.group_ids(request.group_ids)
        except checks.BadRequest as error:
            return self._bad(context, error)
        results = []
        for group_id in ids:
            refusal = self._checked(group_id) or self._coordinator.delete(group_id)
            results.append(group_pb2.GroupResult(group_id=group_id, **_error(refusal)))
        return group_pb2.DeleteGroupsResponse(groups=results)
