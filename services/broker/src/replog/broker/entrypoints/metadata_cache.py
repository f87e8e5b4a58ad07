"""The controller's view of the cluster, as UpdateMetadata delivers it; answers Metadata.

Any broker answers a client's Metadata request from this cache (Kafka's
MetadataCache): live brokers, every partition's leader, leader epoch, replicas
and ISR, and the controller's id. A full update replaces the cache; a delta
adds or replaces partition states and forgets deleted topics; it never
replaces a partition's state with an older one (lower leader epoch, or the
same with a lower partition epoch), since a request the controller gave up on
may still arrive after a newer one. The controller fences stale senders
(controller epoch) before anything reaches here.

It lives at the edge because what it holds are wire messages: the partition
states arrive as UpdateMetadata protobufs and leave, nearly as they are, in
Metadata answers, so it keeps them as they came instead of converting some
13K states a failover both ways. Code past the edge asks it domain questions
only (`has_partition`, `broker_address`).
"""

from __future__ import annotations

import logging
import threading

from replog.common import state_digest
from replog.v1 import broker_control_pb2, common_pb2, log_pb2

NO_CONTROLLER = -1
# A background call folds this many changed partitions into the digest, or a quarter of those
# waiting if that is more, so even a start-up's worth is folded within a few calls.
REFRESH_PER_CALL_MIN = 2000

log = logging.getLogger(__name__)


class MetadataCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._brokers: dict[int, common_pb2.BrokerEndpoint] = {}
        self._topics: dict[str, dict[int, broker_control_pb2.PartitionState]] = {}
        # The digest of _topics (state_digest.metadata_term), brought up to date lazily: updates
        # only note which partitions changed, keeping the hashing off the failover path;
        # `refresh_digest` (the checkpointer's tick, and any confirm) folds them in
        # (docs/perf/metadata-digest.md).
        self._digest = state_digest.Digest()
        self._terms: dict[tuple[str, int], int] = {}  # each partition's term as counted in _digest
        self._stale: set[tuple[str, int]] = set()
        self._controller_id = NO_CONTROLLER
        self._leader_endpoints: dict[int, common_pb2.BrokerEndpoint] = {}  # from LeaderAndIsr, for fetchers

    def update(self, request: broker_control_pb2.UpdateMetadataRequest) -> None:
        with self._lock:
            self._controller_id = request.controller_id
            self._brokers = {b.broker_id: b for b in request.live_brokers}
            stale = self._stale
            if request.full:
                topics = {}
                stale.update(self._terms)
            else:
                topics = self._topics
            for topic in request.deleted_topics:
                stale.update((topic, partition) for partition in topics.pop(topic, {}))
            for state in request.partitions:
                partitions = topics.setdefault(state.topic, {})
                held = partitions.get(state.partition)
                # A delta never takes a partition back to an older state: a request that timed
                # out at the controller may still be applied after a newer one.
                if request.full or held is None or \
                        (state.leader_epoch, state.partition_epoch) >= (held.leader_epoch, held.partition_epoch):
                    partitions[state.partition] = state
                    stale.add((state.topic, state.partition))
            self._topics = topics

    def refresh_digest(self, limit: int | None = None) -> None:
        """Fold some of the partitions changed since they were last folded into the digest: `limit`,
        by default REFRESH_PER_CALL_MIN or a quarter of them, whichever is more.

        The checkpointer's tick calls this once a second: in shares, because folding a failover's
        changes at once held the GIL while the follower appended the partitions it had just started
        following (docs/perf/metadata-digest.md). A controller's confirm still folds whatever is
        left first."""
        with self._lock:
            self._refresh_digest_locked(max(REFRESH_PER_CALL_MIN, len(self._stale) // 4) if limit is None else limit)

    def _refresh_digest_locked(self, limit: int | None = None) -> None:
        digest, terms, topics, stale = self._digest, self._terms, self._topics, self._stale
        for _ in range(len(stale) if limit is None else min(limit, len(stale))):
            key = stale.pop()
            old = terms.pop(key, None)
            if old is not None:
                digest.remove(old)
            state = topics.get(key[0], {}).get(key[1])
            if state is not None:
                terms[key] = term = _term(state)
                digest.add(term)

    def confirm(self, request: broker_control_pb2.UpdateMetadataRequest) -> bool:
        """A confirm-only update: take its live brokers and controller; True when the cache's
        partitions have `request.metadata_digest`, i.e. the full update would change none.
        The digest is kept nearly current in the background, so confirming costs little."""
        with self._lock:
            self._controller_id = request.controller_id
            self._brokers = {b.broker_id: b for b in request.live_brokers}
            self._refresh_digest_locked()
            count = self._digest.count
            matched = state_digest.matches(request.metadata_digest, self._digest)
        log.info("UpdateMetadata confirm: %d partition(s) %s the controller's state", count,
                 "match" if matched else "do not match")
        return matched

    def has_partition(self, topic: str, partition: int) -> bool:
        with self._lock:
            return partition in self._topics.get(topic, {})

    def partition_count(self, topic: str) -> int:
        """How many partitions the cluster has for `topic` (0 when it does not exist)."""
        with self._lock:
            return len(self._topics.get(topic, {}))

    def remember_leader_endpoints(self, endpoints) -> None:
        """LeaderAndIsr names the endpoints of the leaders it mentions; a fetcher may need one
        before the UpdateMetadata that lists the broker arrives."""
        with self._lock:
            for endpoint in endpoints:
                self._leader_endpoints[endpoint.broker_id] = endpoint

    def broker_address(self, broker_id: int) -> str | None:
        with self._lock:
            endpoint = self._leader_endpoints.get(broker_id) or self._brokers.get(broker_id)
        return None if endpoint is None else f"{endpoint.host}:{endpoint.port}"

    def metadata_response(self, topics: list[str]) -> log_pb2.MetadataResponse:
        with self._lock:
            brokers = list(self._brokers.values())
            live = set(self._brokers)
            names = topics or sorted(self._topics)
            described = [_topic_metadata(name, self._topics.get(name), live) for name in names]
            controller_id = self._controller_id
        return log_pb2.MetadataResponse(brokers=brokers, controller_id=controller_id, topics=described)


def _term(state: broker_control_pb2.PartitionState) -> int:
    return state_digest.metadata_term(state.topic, state.partition, state.leader, state.leader_epoch,
                                      state.partition_epoch, state.isr, state.replicas, state.adding_replicas,
                                      state.removing_replicas)


def _topic_metadata(
    name: str, partitions: dict[int, broker_control_pb2.PartitionState] | None, live: set[int]
) -> log_pb2.TopicMetadata:
    if not partitions:
        return log_pb2.TopicMetadata(name=name, error_code=common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION)
    described = []
    for index in sorted(partitions):
        state = partitions[index]
        leader_alive = state.leader >= 0 and state.leader in live
        described.append(log_pb2.PartitionMetadata(
            partition=index,
            error_code=common_pb2.ERROR_CODE_NONE if leader_alive else common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
            leader=state.leader if leader_alive else -1,
            leader_epoch=state.leader_epoch,
            replicas=state.replicas,
            isr=state.isr,
            offline_replicas=[r for r in state.replicas if r not in live],
        ))
    return log_pb2.TopicMetadata(name=name, error_code=common_pb2.ERROR_CODE_NONE, partitions=described)
