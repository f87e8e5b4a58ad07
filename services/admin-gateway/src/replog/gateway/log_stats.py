"""Asks brokers about their replicas (LogService.DescribeReplicas), best effort.

Used for the export's LEO / HW / size and for reassignment progress (how far
an adding replica is behind its leader). A broker that is dead, slow (over
the deps' timeout), or does not implement the call yet simply contributes
nothing, and the caller reports -1: an admin answer never waits on, or fails
because of, one broker. Brokers are asked in parallel, one call each.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Collection, Mapping

import grpc

from replog.common.core.partitions import TopicPartition
from replog.common.zk.schema import BrokerRegistration
from replog.gateway.deps import GatewayDeps
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc

log = logging.getLogger(__name__)
UNKNOWN = -1
PARALLEL_CALLS_MAX = 16

ReplicasByBroker = dict[int, dict[TopicPartition, log_pb2.ReplicaDescription]]


def describe_replicas(
    deps: GatewayDeps,
    brokers: Mapping[int, BrokerRegistration],
    partitions: Mapping[int, Collection[TopicPartition]] | None = None,
    defaults_out: dict[int, dict[str, str]] | None = None,
) -> ReplicasByBroker:
    """Broker id -> its replica descriptions. `partitions` None asks each broker for all its replicas;
    otherwise only the brokers named, for the partitions listed. `defaults_out`, when given, receives
    each answering broker's topic config defaults."""
    asked = {b: () for b in brokers} if partitions is None else {b: p for b, p in partitions.items() if b in brokers}
    if not asked:
        return {}

    def ask(broker_id: int) -> tuple[int, dict[TopicPartition, log_pb2.ReplicaDescription]]:
        registration = brokers[broker_id]
        request = log_pb2.DescribeReplicasRequest(
            partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in sorted(asked[broker_id])]
        )
        try:
            stub = log_pb2_grpc.LogServiceStub(deps.channels.get(f"{registration.host}:{registration.port}"))
            reply = stub.DescribeReplicas(request, timeout=deps.broker_rpc_timeout_s)
        except grpc.RpcError as exc:
            log.debug("DescribeReplicas on broker %d: %s", broker_id, exc.code() if hasattr(exc, "code") else exc)
            return broker_id, {}
        if defaults_out is not None:
            defaults_out[broker_id] = dict(reply.topic_config_defaults)
        return broker_id, {(r.topic, r.partition): r for r in reply.replicas}

    with ThreadPoolExecutor(max_workers=min(PARALLEL_CALLS_MAX, len(asked)), thread_name_prefix="describe") as pool:
        return dict(pool.map(ask, sorted(asked)))


def leader_replica(
    replicas: ReplicasByBroker, leader: int, tp: TopicPartition
) -> log_pb2.ReplicaDescription | None:
    """The leader's own description of the partition, if it answered and still leads."""
    found = replicas.get(leader, {}).get(tp)
    return found if found is not None and found.leader else None


def bytes_behind(replicas: ReplicasByBroker, leader: int, tp: TopicPartition, catching_up: Collection[int]) -> int:
    """Bytes the slowest of `catching_up` is behind the leader, or -1 when unknown."""
    description = leader_replica(replicas, leader, tp)
    if description is None or not catching_up:
        return UNKNOWN
    lags = {f.broker_id: f.bytes_behind for f in description.followers}
    if not all(b in lags for b in catching_up):
        return UNKNOWN
    return max(lags[b] for b in catching_up)
