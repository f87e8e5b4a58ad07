"""Leader discovery: a cache of partition leaders refreshed through Metadata.

Any broker answers Metadata from the controller's UpdateMetadata; after a
NOT_LEADER answer or a connection failure the client refreshes and retries
against the new leader.

Which broker to ask (`metadata_candidates`): a broker the client saw fail in
the last `UNREACHABLE_FORGET_S` (a refused or timed-out call, a lost stream:
`mark_unreachable`) is asked last, so a refresh after a failover does not
start at the broker that just died. Before it come the brokers that lead a
partition the client knows (the controller counted them alive when it chose
them), then the other live brokers, then the bootstrap addresses; each group
shuffled, to spread the load. Each broker gets `timeout_s` (brief: a silent
broker costs that much once); only if every broker asked timed out (none
refused, none answered) are they asked again with `PATIENT_TIMEOUT_S`, for a
cluster merely slow to answer, as a very large one may be.

Channels are mutual TLS with the certificate given (`tls`), else the one the environment or a local
cluster's state directory names (security/local.py), else plaintext with `insecure=True`.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

import grpc

from replog.common.channels import ChannelCache
from replog.common.security.files import TlsFiles
from replog.common.security.local import resolve_client_tls
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc

UNREACHABLE_FORGET_S = 30.0
PATIENT_TIMEOUT_S = 5.0


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


def metadata_candidates(leaders: set[str], brokers: list[str], bootstrap: list[str],
                        failed_at_s: dict[str, float], now_s: float, rng: random.Random) -> list[str]:
    """The addresses to ask for Metadata, in order (see the module docstring); each once."""
    def failed_recently(address: str) -> bool:
        return now_s - failed_at_s.get(address, float("-inf")) < UNREACHABLE_FORGET_S

    order: list[str] = []
    for group in (leaders, brokers, bootstrap):
        fresh = [a for a in dict.fromkeys(group) if not failed_recently(a) and a not in order]
        rng.shuffle(fresh)
        order += fresh
    failed = [a for a in dict.fromkeys([*leaders, *brokers, *bootstrap]) if a not in order]
    return order + sorted(failed, key=lambda a: failed_at_s[a])  # the longest ago first


def bootstrap_addresses(bootstrap: str | list[str] | tuple[str, ...]) -> list[str]:
    """Broker addresses from a list, or from one string of comma-separated host:port ("a:1,b:2")."""
    if isinstance(bootstrap, str):
        bootstrap = bootstrap.split(",")
    addresses = [a.strip() for a in bootstrap if a and a.strip()]
    for address in addresses:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"a bootstrap address is host:port, not {address!r}")
    return addresses


class MetadataCache:
    def __init__(self, bootstrap: str | list[str], channels: ChannelCache | None = None, *,
                 timeout_s: float = 1.0, tls: TlsFiles | None = None, insecure: bool = False) -> None:
        self.bootstrap = bootstrap_addresses(bootstrap)
        if not self.bootstrap:
            raise ValueError("at least one bootstrap broker address (host:port) is needed")
        self.channels = channels or ChannelCache(tls if tls is not None else resolve_client_tls(insecure=insecure))
        self.timeout_s = timeout_s
        self.refreshed_at_s = float("-inf")  # time.monotonic() of the last refresh that got an answer
        self._lock = threading.Lock()
        self._brokers: dict[int, str] = {}
        self._partitions: dict[tuple[str, int], PartitionInfo] = {}
        self._topic_partitions: dict[str, int] = {}
        self._failed_at_s: dict[str, float] = {}
        self._rng = random.Random()

    def stub(self, address: str) -> log_pb2_grpc.LogServiceStub:
        return log_pb2_grpc.LogServiceStub(self.channels.get(address))

    def mark_unreachable(self, address: str) -> None:
        """A call to `address` failed (or it stopped answering): ask it last for a while."""
        with self._lock:
            self._failed_at_s[address] = time.monotonic()

    def refresh(self, topics: list[str] | None = None) -> log_pb2.MetadataResponse:
        request = log_pb2.MetadataRequest(topics=topics or [])
        with self._lock:
            leaders = {self._brokers[i.leader] for i in self._partitions.values() if i.leader in self._brokers}
            candidates = metadata_candidates(leaders, list(self._brokers.values()), self.bootstrap,
                                             dict(self._failed_at_s), time.monotonic(), self._rng)
        last: Exception | None = None
        for timeout_s in (self.timeout_s, max(self.timeout_s, PATIENT_TIMEOUT_S)):
            timed_out: list[str] = []
            for address in candidates:
                try:
                    reply = self.stub(address).Metadata(request, timeout=timeout_s)
                except grpc.RpcError as exc:
                    last = exc
                    self.mark_unreachable(address)
                    if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                        timed_out.append(address)
                    continue
                if not reply.brokers:
                    continue  # this broker has no metadata yet
                self._apply(reply, address)
                return reply
            if len(timed_out) < len(candidates):
                break  # a broker refused or had no metadata: not a slow cluster, a failed one
            candidates = timed_out
        raise NoBrokerReachable(f"no broker answered Metadata (tried {', '.join(candidates)}): {last}")

    def _apply(self, reply: log_pb2.MetadataResponse, address: str) -> None:
        with self._lock:
            self._failed_at_s.pop(address, None)
            self._brokers = {b.broker_id: f"{b.host}:{b.port}" for b in reply.brokers}
            for topic in reply.topics:
                if topic.error_code != common_pb2.ERROR_CODE_NONE:
                    continue
                self._topic_partitions[topic.name] = len(topic.partitions)
                for p in topic.partitions:
                    self._partitions[(topic.name, p.partition)] = PartitionInfo(
                        topic.name, p.partition, p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr))
            self.refreshed_at_s = time.monotonic()

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
        """A broker to ask (one that has not failed lately, if any)."""
        with self._lock:
            brokers = list(self._brokers.values())
            now_s = time.monotonic()
            fresh = [a for a in brokers if now_s - self._failed_at_s.get(a, float("-inf")) >= UNREACHABLE_FORGET_S]
        return next(iter(fresh or brokers), self.bootstrap[0])

    def close(self) -> None:
        self.channels.close()
