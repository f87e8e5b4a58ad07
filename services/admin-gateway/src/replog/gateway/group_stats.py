"""Asks brokers about the consumer groups they coordinate (GroupService), best effort, for the export.

Each live broker is asked, in parallel, ListGroups (the groups of the offsets partitions it leads),
then DescribeGroups for those groups (at most `DESCRIBE_BATCH_MAX` a call) and OffsetFetch for each.
As with log_stats.py, a broker that is dead, slow or not coordinating yet contributes nothing and
the export goes on without its groups; an admin answer never fails because of one broker. A group
listed by two brokers (its coordinator moving between the two calls) is taken from the lower id.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Mapping

import grpc

from replog.common.zk.schema import BrokerRegistration
from replog.gateway.deps import GatewayDeps
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc

log = logging.getLogger(__name__)
PARALLEL_CALLS_MAX = 16
DESCRIBE_BATCH_MAX = 100  # GroupService.DescribeGroups takes 1 to 100 group ids


@dataclass(frozen=True)
class GroupSnapshot:
    group: str
    state: str
    generation: int
    members: int
    coordinator: int
    committed: dict[tuple[str, int], int] = field(default_factory=dict)  # (topic, partition) -> offset


def _state(state: int) -> str:
    return {
        group_pb2.GROUP_STATE_EMPTY: "Empty", group_pb2.GROUP_STATE_PREPARING_REBALANCE: "PreparingRebalance",
        group_pb2.GROUP_STATE_COMPLETING_REBALANCE: "CompletingRebalance", group_pb2.GROUP_STATE_STABLE: "Stable",
        group_pb2.GROUP_STATE_DEAD: "Dead",
    }.get(state, "Unknown")


def describe_groups(deps: GatewayDeps, brokers: Mapping[int, BrokerRegistration]) -> list[GroupSnapshot]:
    """Every group the live brokers coordinate, in group id order."""
    if not brokers:
        return []

    def ask(broker_id: int) -> list[GroupSnapshot]:
        registration = brokers[broker_id]
        stub = group_pb2_grpc.GroupServiceStub(deps.channels.get(f"{registration.host}:{registration.port}"))
        timeout_s = deps.broker_rpc_timeout_s
        try:
            listed = stub.ListGroups(group_pb2.ListGroupsRequest(), timeout=timeout_s)
            ids = [g.group_id for g in listed.groups]
            found = []
            for start in range(0, len(ids), DESCRIBE_BATCH_MAX):
                batch = ids[start:start + DESCRIBE_BATCH_MAX]
                described = stub.DescribeGroups(group_pb2.DescribeGroupsRequest(group_ids=batch), timeout=timeout_s)
                for g in described.groups:
                    if g.error_code != common_pb2.ERROR_CODE_NONE:
                        continue  # it moved, or was deleted, since the listing
                    fetched = stub.OffsetFetch(group_pb2.OffsetFetchRequest(group_id=g.group_id), timeout=timeout_s)
                    committed = {} if fetched.error_code != common_pb2.ERROR_CODE_NONE else {
                        (o.topic, o.partition): o.offset for o in fetched.offsets if o.offset >= 0}
                    found.append(GroupSnapshot(g.group_id, _state(g.state), g.generation_id, len(g.members),
                                               broker_id, committed))
            return found
        except grpc.RpcError as exc:
            log.debug("groups of broker %d: %s", broker_id, exc.code() if hasattr(exc, "code") else exc)
            return []

    workers = min(PARALLEL_CALLS_MAX, len(brokers))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="describe-groups") as pool:
        answers = list(pool.map(ask, sorted(brokers)))
    by_group: dict[str, GroupSnapshot] = {}
    for snapshots in answers:
        for snapshot in snapshots:
            by_group.setdefault(snapshot.group, snapshot)
    return [by_group[g] for g in sorted(by_group)]
