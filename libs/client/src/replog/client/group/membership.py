"""A member's side of the group protocol: find the coordinator, join, sync, heartbeat, commit, leave.

Theory of operation. `Membership` holds the member id and generation and talks to the group's
coordinator, found with FindCoordinator on any broker and looked up again whenever an answer says
NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or the call fails in transit (the coordinator moved
or died). `rebalance()` runs join and sync until it has an assignment; as the group's leader it runs
the chosen assignor (assignors.py) over every member's subscription. A heartbeat thread keeps the
session alive and raises `rejoin_needed` when the coordinator says the group is rebalancing, or that
this member's generation or id is stale. As the leader it also notes the partition counts it assigned
and, every `metadata_max_age_ms`, compares them with fresh metadata: a subscribed topic that gained
partitions makes it rejoin, which rebalances the group so the new partitions get an owner (Kafka's
leader does the same). The consumer's own thread does every join, sync and commit;
the heartbeat thread only heartbeats, so a slow application is noticed by the coordinator only
after the session timeout, as in Kafka before KIP-62's poll interval.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

import grpc

from replog.client.group.assignors import Subscription, assign
from replog.client.metadata import MetadataCache, NoBrokerReachable
from replog.client.results import GroupError
from replog.common import telemetry
from replog.common.core.partitions import TopicPartition
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc

log = logging.getLogger(__name__)

E = common_pb2
CALL_TIMEOUT_S = 10.0
RETRY_BACKOFF_S = 0.2
_LOOK_AGAIN = {E.ERROR_CODE_NOT_COORDINATOR, E.ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
               E.ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS}
_REJOIN = {E.ERROR_CODE_REBALANCE_IN_PROGRESS, E.ERROR_CODE_ILLEGAL_GENERATION, E.ERROR_CODE_UNKNOWN_MEMBER_ID}


@dataclass(frozen=True)
class Joined:
    generation_id: int
    protocol_name: str
    assignment: tuple[TopicPartition, ...]


class Membership:
    def __init__(self, metadata: MetadataCache, group_id: str, topics: tuple[str, ...], *, client_id: str,
                 assignors: tuple[str, ...], session_timeout_ms: int, rebalance_timeout_ms: int,
                 heartbeat_interval_ms: int, metadata_max_age_ms: int = 30_000) -> None:
        self.metadata = metadata
        self.group_id = group_id
        self.topics = topics
        self.client_id = client_id
        self.assignors = assignors
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.metadata_max_age_s = metadata_max_age_ms / 1000
        self._assigned_counts: dict[str, int] | None = None  # as the leader: the partition counts it assigned
        self._counts_checked_s = time.monotonic()
        self.member_id = ""
        self.generation_id = -1
        self.rejoin_needed = threading.Event()
        self.rejoin_needed.set()
        self._lock = threading.Lock()
        self._coordinator: str | None = None
        self._stop = threading.Event()
        self._heartbeats = threading.Thread(target=self._heartbeat_loop, name=f"heartbeat-{group_id}", daemon=True)
        self._heartbeats.start()

    # --- the coordinator ---

    def _stub(self) -> group_pb2_grpc.GroupServiceStub:
        with self._lock:
            address = self._coordinator
        if address is None:
            address = self._find()
        return group_pb2_grpc.GroupServiceStub(self.metadata.channels.get(address))

    def _find(self) -> str:
        deadline = time.monotonic() + self.session_timeout_ms / 1000 + 30
        while True:
            problem = "no broker answered"
            try:
                stub = group_pb2_grpc.GroupServiceStub(self.metadata.channels.get(self.metadata.any_broker()))
                found = stub.FindCoordinator(group_pb2.FindCoordinatorRequest(group_id=self.group_id),
                                             timeout=CALL_TIMEOUT_S)
                if found.error_code == E.ERROR_CODE_NONE:
                    address = f"{found.coordinator.host}:{found.coordinator.port}"
                    with self._lock:
                        self._coordinator = address
                    return address
                if found.error_code not in _LOOK_AGAIN:
                    raise GroupError(found.error_code, found.error_message)
                problem = found.error_message
            except grpc.RpcError as error:
                problem = str(error.code())
            if time.monotonic() > deadline:
                raise GroupError(E.ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
                                 f"no coordinator for {self.group_id}: {problem}")
            time.sleep(RETRY_BACKOFF_S)

    def _forget_coordinator(self) -> None:
        with self._lock:
            self._coordinator = None

    def call(self, method: str, request, timeout_s: float = CALL_TIMEOUT_S):
        """A GroupService call to the coordinator, looking it up again while it moves."""
        deadline = time.monotonic() + self.session_timeout_ms / 1000 + 30
        while True:
            try:
                # The application's trace context, if it traces: a coordinator links its rebalance span to it.
                reply = getattr(self._stub(), method)(request, timeout=timeout_s, metadata=telemetry.inject_metadata())
                if reply.error_code not in _LOOK_AGAIN:
                    return reply
                problem = reply.error_message
            except grpc.RpcError as error:
                if error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED):
                    raise
                problem = str(error.code())
            self._forget_coordinator()
            if time.monotonic() > deadline:
                raise GroupError(E.ERROR_CODE_COORDINATOR_NOT_AVAILABLE, f"{method} for {self.group_id}: {problem}")
            time.sleep(RETRY_BACKOFF_S)

    # --- join and sync ---

    def rebalance(self, owned: tuple[TopicPartition, ...]) -> Joined:
        """Join and sync until this member has an assignment of the group's current generation."""
        deadline = time.monotonic() + 3 * (self.rebalance_timeout_ms / 1000 + 10)
        while True:
            if time.monotonic() > deadline:
                raise GroupError(E.ERROR_CODE_REBALANCE_IN_PROGRESS,
                                 f"group {self.group_id} did not settle into a generation; is it changing constantly?")
            self._assigned_counts = None
            protocols = [group_pb2.GroupProtocol(
                name=name, topics=self.topics,
                owned_partitions=[E.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in owned])
                for name in self.assignors]
            joined = self.call("JoinGroup", group_pb2.JoinGroupRequest(
                group_id=self.group_id, member_id=self.member_id, client_id=self.client_id,
                session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=self.rebalance_timeout_ms,
                protocol_type="consumer", protocols=protocols), timeout_s=self.rebalance_timeout_ms / 1000 + 10)
            if joined.error_code == E.ERROR_CODE_UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if joined.error_code in _REJOIN:
                continue
            if joined.error_code != E.ERROR_CODE_NONE:
                raise GroupError(joined.error_code, joined.error_message)
            with self._lock:
                self.member_id, self.generation_id = joined.member_id, joined.generation_id
            plan = self._assign(joined) if joined.members else []
            synced = self.call("SyncGroup", group_pb2.SyncGroupRequest(
                group_id=self.group_id, generation_id=joined.generation_id, member_id=joined.member_id,
                assignments=plan), timeout_s=self.rebalance_timeout_ms / 1000 + 10)
            if synced.error_code in _REJOIN:
                continue
            if synced.error_code != E.ERROR_CODE_NONE:
                raise GroupError(synced.error_code, synced.error_message)
            self.rejoin_needed.clear()
            partitions = tuple(sorted(TopicPartition(tp.topic, tp.partition) for tp in synced.assignment.partitions))
            return Joined(joined.generation_id, joined.protocol_name, partitions)

    def _assign(self, joined) -> list[group_pb2.MemberAssignment]:
        subscriptions = [Subscription(m.member_id, tuple(m.protocol.topics),
                                      tuple(TopicPartition(tp.topic, tp.partition)
                                            for tp in m.protocol.owned_partitions))
                         for m in joined.members]
        topics = sorted({t for s in subscriptions for t in s.topics})
        self.metadata.refresh(topics)
        counts = {t: self.metadata.partition_count(t) for t in topics}
        self._assigned_counts = counts
        self._counts_checked_s = time.monotonic()
        result = assign(joined.protocol_name, subscriptions, counts)
        return [group_pb2.MemberAssignment(member_id=m, partitions=[
            E.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in tps])
            for m, tps in result.by_member.items()]

    def partition_counts_changed(self) -> bool:
        """As the leader, once every `metadata_max_age_ms`: whether a subscribed topic's partition count moved
        since the assignment; if so the member must rejoin (`rejoin_needed` is set)."""
        assigned = self._assigned_counts
        if assigned is None or time.monotonic() - self._counts_checked_s < self.metadata_max_age_s:
            return False
        self._counts_checked_s = time.monotonic()
        try:
            self.metadata.refresh(sorted(assigned))
            now = {t: self.metadata.partition_count(t) for t in assigned}
        except (NoBrokerReachable, KeyError) as error:
            log.info("group %s: partition counts not checked this time: %s", self.group_id, error)
            return False
        if now == assigned:
            return False
        log.info("group %s: partition counts changed from %s to %s; rebalancing", self.group_id, assigned, now)
        self._assigned_counts = None
        self.rejoin_needed.set()
        return True

    # --- commits, heartbeats, leaving ---

    def commit(self, offsets: dict[TopicPartition, tuple[int, int]]) -> None:
        """Store offsets (partition -> (offset, leader epoch)) for the current generation; raises GroupError."""
        if not offsets:
            return
        with self._lock:
            member_id, generation_id = self.member_id, self.generation_id
        reply = self.call("OffsetCommit", group_pb2.OffsetCommitRequest(
            group_id=self.group_id, generation_id=generation_id, member_id=member_id,
            partitions=[group_pb2.OffsetCommitPartition(topic=tp.topic, partition=tp.partition, offset=offset,
                                                        leader_epoch=epoch)
                        for tp, (offset, epoch) in sorted(offsets.items())]))
        if reply.error_code in _REJOIN:
            self.rejoin_needed.set()
        if reply.error_code != E.ERROR_CODE_NONE:
            raise GroupError(reply.error_code, reply.error_message)

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: offset for tp, (offset, _) in self.committed_with_epochs(partitions).items()}

    def committed_with_epochs(self, partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """Partition -> (committed offset, the leader epoch committed with it, -1 when none was)."""
        reply = self.call("OffsetFetch", group_pb2.OffsetFetchRequest(group_id=self.group_id, partitions=[
            E.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in partitions]))
        if reply.error_code != E.ERROR_CODE_NONE:
            raise GroupError(reply.error_code, reply.error_message)
        return {TopicPartition(o.topic, o.partition): (o.offset, o.leader_epoch) for o in reply.offsets
                if o.offset >= 0}

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval_s):
            with self._lock:
                member_id, generation_id, address = self.member_id, self.generation_id, self._coordinator
            if not member_id or generation_id < 0 or address is None or self.rejoin_needed.is_set():
                continue
            try:
                stub = group_pb2_grpc.GroupServiceStub(self.metadata.channels.get(address))
                reply = stub.Heartbeat(group_pb2.HeartbeatRequest(
                    group_id=self.group_id, generation_id=generation_id, member_id=member_id), timeout=CALL_TIMEOUT_S)
            except grpc.RpcError:
                self._forget_coordinator()
                continue
            if reply.error_code in _LOOK_AGAIN:
                self._forget_coordinator()
            elif reply.error_code in _REJOIN:
                self.rejoin_needed.set()

    def leave(self) -> None:
        self._stop.set()
        with self._lock:
            member_id = self.member_id
        if member_id:
            try:
                self.call("LeaveGroup", group_pb2.LeaveGroupRequest(group_id=self.group_id, member_id=member_id),
                          timeout_s=5)
            except (GroupError, grpc.RpcError) as error:
                log.info("leaving group %s: %s (the session timeout removes this member)", self.group_id, error)
        self._heartbeats.join(timeout=self.heartbeat_interval_s + CALL_TIMEOUT_S)


Callback = Callable[[list[TopicPartition]], None]
