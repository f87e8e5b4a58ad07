"""Leader discovery: a cache of partition leaders refreshed through Metadata.

Any broker answers Metadata from the controller's UpdateMetadata; after a
NOT_LEADER answer or a connection failure the client refreshes and retries
against the new leader.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

import grpc

from replog.common.channels import ChannelCache
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc


class NoBrokerReachable(RuntimeError):
    pass


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class MetadataCache:
    def __init__(self, bootstrap: list[str], channels: ChannelCache | None = None) -> None:
        if not bootstrap:
            raise ValueError("at least one bootstrap broker address (host:port) is needed")
        self.bootstrap = list(bootstrap)
        self.channels = channels or ChannelCache()
        self._lock = threading.Lock()
        self._brokers: dict[int, str] = {}
        self._partitions: dict[tuple[str, int], PartitionInfo] = {}
        self._topic_partitions: dict[str, int] = {}

    def stub(self, address: str) -> log_pb2_grpc.LogServiceStub:
        return log_pb2_grpc.LogServiceStub(self.channels.get(address))

    def refresh(self, topics: list[str] | None = None, timeout_s: float = 5.0) -> log_pb2.MetadataResponse:
        candidates = list(self._brokers.values()) + self.bootstrap
        random.shuffle(candidates)
        last: Exception | None = None
        for address in dict.fromkeys(candidates):
            try:
                reply = self.stub(address).Metadata(log_pb2.MetadataRequest(topics=topics or []), timeout=timeout_s)
            except grpc.RpcError as exc:
                last = exc
                continue
            if not reply.brokers:
                continue  # this broker has no metadata yet
            with self._lock:
                self._brokers = {b.broker_id: f"{b.host}:{b.port}" for b in reply.brokers}
                for topic in reply.topics:
                    if topic.error_code != common_pb2.ERROR_CODE_NONE:
                        continue
                    self._topic_partitions[topic.name] = len(topic.partitions)
                    for p in topic.partitions:
                        self._partitions[(topic.name, p.partition)] = PartitionInfo(
                            topic.name, p.partition, p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr))
            return reply
        raise NoBrokerReachable(f"no broker answered Metadata (tried {', '.join(dict.fromkeys(candidates))}): {last}")

    def partition_count(self, topic: str) -> int:
        if topic not in self._topic_partitions:
            self.refresh([topic])
        count = self._topic_partitions.get(topic, 0)
        if count == 0:
            raise KeyError(f"topic {topic!r} does not exist (or has no metadata yet)")
        return count

    def leader_address(self, topic: str, partition: int) -> tuple[str, int] | None:
        """(address, leader_epoch) of the partition's leader, or None when unknown / offline."""
        info = self._partitions.get((topic, partition))
        if info is None or info.leader < 0 or info.leader not in self._brokers:
            return None
        return self._brokers[info.leader], info.leader_epoch

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self._partitions.get((topic, partition))

    def any_broker(self) -> str:
        return next(iter(self._brokers.values()), self.bootstrap[0])

    def close(self) -> None:
        self.channels.close()
