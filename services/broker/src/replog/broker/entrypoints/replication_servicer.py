"""gRPC ReplicationService: followers' ReplicaFetch (long-poll), and OffsetForLeaderEpoch for tools and tests.

Followers fetch through ReplicaFetchStream, the same request and answer in turns
over one stream per fetcher, which costs the leader less per round trip than a
unary call (docs/perf/fetch-stream.md); ReplicaFetch stays for a single request
(tools, tests).

ReplicaFetch reads every requested partition through the leader core
(leader_side.read_for_follower): the follower's fetch offset is its LEO, the
core records it, may advance the HW and may propose an ISR expansion (the
step's effects complete delayed produces and hand the proposal to the ISR
sender once the partition lock is released, replicas/consequences.py). With no records to send the request long-polls
on the partitions' wake-up events (long_poll.py) up to `max_wait_ms`.
A fetch from a broker not in a partition's assignment is refused per
partition by the core (NOT_ASSIGNED_REPLICA). The answer leaves out partitions
with nothing new for the follower (no records, no error, no HW above the one
it says it holds), so an idle partition costs nothing per round
(docs/perf/fetch-sessions.md).
"""

from __future__ import annotations

import time
from typing import Callable

from replog.broker.config import REPLICA_FETCHERS_MAX
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import FollowerFetchAnswer, offset_for_leader_epoch, read_for_follower
from replog.broker.replication.fetch_sessions import FetchSessions, FollowerPosition
from replog.broker.replication.replication_throttle import ReplicationThrottle
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.turn import Turn
from replog.common import hopmarks
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition
from replog.common.grpc_server import OpenStreams
from replog.common.hopmarks import Hop
from replog.v1 import common_pb2, replication_pb2, replication_pb2_grpc

FETCH_WAIT_MS_MAX = 30_000


class ReplicationServicer(replication_pb2_grpc.ReplicationServiceServicer):
    def __init__(
        self,
        *,
        broker_id: int,
        lookup: Callable[[TopicPartition], HostedPartition | None],
        clock: Clock,
        metrics: BrokerMetrics,
        fetch_bytes_max: int,
        stopping: Callable[[], bool],
        turn: Turn,
        throttle: ReplicationThrottle | None = None,
    ) -> None:
        self._broker_id = broker_id
        self._lookup = lookup
        self._clock = clock
        self._metrics = metrics
        self._fetch_bytes_max = fetch_bytes_max
        self._stopping = stopping
        self._sessions = FetchSessions(lookup, turn=turn, throttle=throttle)
        self._streams = OpenStreams()  # the open ReplicaFetchStreams

    def ReplicaFetch(self, request, context):
        response = replication_pb2.ReplicaFetchResponse()
        self._fetch(request, context, set(), response)
        return response

    def ReplicaFetchStream(self, request_iterator, context):
        """ReplicaFetch in turns over one stream: each request gets one response before the next is
        read. The stream ends after the answer to a request that arrived while the broker stops, so
        a stop does not wait for it."""
        self._streams.track(context)
        interrupts: set[int] = set()
        for request in request_iterator:
            hopmarks.mark(Hop.LEADER_HAS_FETCH, request.fetch.replica_id)
            # Filled in place: a fetch answer built apart and then set as `fetch` would be copied,
            # records and all (tens of kB per answer at 10 MB/s).
            response = replication_pb2.ReplicaFetchStreamResponse()
            if not request.HasField("fetch"):
                _refuse(response.fetch, ErrorCode.INVALID_REQUEST, "a ReplicaFetchStream request carries a fetch")
            else:
                self._fetch(request.fetch, context, interrupts, response.fetch)
            hopmarks.mark(Hop.LEADER_ANSWERS_FOLLOWER, request.fetch.replica_id)
            yield response
            if self._stopping():
                return

    def end_streams(self) -> None:
        """Cancel every open fetch stream (the broker is stopping): one waiting for its follower's
        next request would otherwise hold the server's graceful stop for its whole grace period."""
        self._streams.cancel_all()

    def _fetch(self, request, context, interrupts: set[int], response: replication_pb2.ReplicaFetchResponse) -> None:
        """One fetch, answered by filling `response` (an empty ReplicaFetchResponse). `interrupts` names
        the sessions whose interrupt is already registered with this RPC's context: a stream registers
        each once, not once per request."""
        started = time.perf_counter()
        if request.replica_id < 0 or request.replica_id == self._broker_id:
            return _refuse(response, ErrorCode.INVALID_REQUEST, f"replica id {request.replica_id} may not fetch here")
        if not 0 <= request.fetcher_id < REPLICA_FETCHERS_MAX or not 0 <= request.fetcher_count <= REPLICA_FETCHERS_MAX:
            return _refuse(response, ErrorCode.INVALID_REQUEST,
                           f"fetcher id {request.fetcher_id} (of {request.fetcher_count}) is out of range: a "
                           f"follower has at most {REPLICA_FETCHERS_MAX} fetchers per leader, numbered from 0")
        if self._stopping():
            return _refuse(response, ErrorCode.BROKER_SHUTTING_DOWN, "the broker is shutting down")
        bytes_max = min(request.max_bytes or self._fetch_bytes_max, self._fetch_bytes_max)
        if request.session_epoch == 0:
            session = self._sessions.open(request.replica_id, request.fetcher_id,
                                          max(request.fetcher_count, request.fetcher_id + 1))
        else:
            session = self._sessions.find(request.replica_id, request.session_id, request.fetcher_id)
            if isinstance(session, Refusal):
                return _refuse(response, session.code, session.reason)
        if session.session_id not in interrupts:
            interrupts.add(session.session_id)
            context.add_callback(session.interrupt)
        with session.lock:
            if session.closed or not session.admits(request.session_epoch, resend=request.resend):
                if session.closed:
                    session.unpark_all()
                return _refuse(response, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                               f"fetch session {session.session_id} expects epoch {session.epoch + 1}, "
                               f"not {request.session_epoch}; open a new one")
            session.epoch = request.session_epoch
            answers = session.poll(
                session.listed(_positions(request.partitions)),
                lambda tp, position, hosted, bytes_left: self._read_one(
                    request.replica_id, request.replica_broker_epoch, position, hosted, tp, bytes_left),
                bytes_max=bytes_max, min_bytes=max(request.min_bytes, 1),
                max_wait_ms=min(request.max_wait_ms, FETCH_WAIT_MS_MAX), clock=self._clock,
                stopping=lambda: self._stopping() or not context.is_active(),
                resend=request.resend and request.session_epoch > 0,
            )
            news = session.news(answers)
        response.session_id = session.session_id
        add_partition = response.partitions.add
        for tp, answer in news:
            _add_partition_data(add_partition, tp, answer)
        sent = sum(len(a.records) for a in answers.values())
        metrics = self._metrics.follower_fetch
        metrics.requests.inc()
        metrics.count_errors(answer.error_code for _, answer in news)
        metrics.bytes_out.inc(sent)
        metrics.duration_s.observe(time.perf_counter() - started)

    def _read_one(self, replica_id: int, replica_broker_epoch: int, partition: FollowerPosition,
                  hosted: HostedPartition | None, tp: TopicPartition, bytes_max: int) -> FollowerFetchAnswer:
        if hosted is None:
            return FollowerFetchAnswer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not hosted here",
                                       -1, -1, -1, -1)
        if partition.fetch_offset < 0:
            return FollowerFetchAnswer(ErrorCode.OFFSET_OUT_OF_RANGE, f"negative fetch offset {partition.fetch_offset}",
                                       -1, -1, -1, -1)
        return read_for_follower(
            hosted, replica_id=replica_id, current_leader_epoch=partition.current_leader_epoch,
            fetch_offset=partition.fetch_offset, last_fetched_epoch=partition.last_fetched_epoch,
            replica_broker_epoch=replica_broker_epoch,
            bytes_max=min(partition.partition_max_bytes or bytes_max, bytes_max), now_ms=self._clock.monotonic_ms(),
        )

    def OffsetForLeaderEpoch(self, request, context):
        results = []
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            hosted = self._lookup(tp)
            found = (Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not hosted here") if hosted is None
                     else offset_for_leader_epoch(hosted, current_leader_epoch=item.current_leader_epoch,
                                                  requested_leader_epoch=item.leader_epoch))
            if isinstance(found, Refusal):
                results.append(replication_pb2.OffsetForLeaderEpochResult(
                    topic=tp.topic, partition=tp.partition, error_code=found.code,
                    epoch_end_offset=common_pb2.EpochEndOffset(leader_epoch=-1, end_offset=-1)))
            else:
                results.append(replication_pb2.OffsetForLeaderEpochResult(
                    topic=tp.topic, partition=tp.partition, error_code=ErrorCode.NONE,
                    epoch_end_offset=common_pb2.EpochEndOffset(leader_epoch=found.leader_epoch,
                                                               end_offset=found.end_offset)))
        return replication_pb2.OffsetForLeaderEpochResponse(partitions=results)


def _positions(partitions) -> list[FollowerPosition]:
    """The positions a fetch names (`partitions`: its ReplicaFetchPartitions), as domain values.

    A follower joining a session names thousands after a failover: each is made as the plain
    tuple it is, without the keyword handling of the named tuple's constructor."""
    new = tuple.__new__
    return [new(FollowerPosition, (p.topic, p.partition, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch,
                                   p.partition_max_bytes, p.known_high_watermark, p.log_start_offset))
            for p in partitions]


def _refuse(response: replication_pb2.ReplicaFetchResponse, code: ErrorCode, message: str) -> None:
    """Answer a whole fetch with an error (`response`: the ReplicaFetchResponse being filled)."""
    response.error_code = code
    response.error_message = message


def _add_partition_data(add_partition, tp: TopicPartition, answer: FollowerFetchAnswer) -> None:
    """One partition's answer, added in place (`add_partition`: the response's `partitions.add`)."""
    data = add_partition(
        topic=tp.topic, partition=tp.partition, error_code=answer.error_code, error_message=answer.message,
        high_watermark=answer.high_watermark, log_start_offset=answer.log_start_offset,
        log_end_offset=answer.log_end_offset, leader_epoch=answer.leader_epoch, records=answer.records,
    )
    if answer.diverging is not None:
        data.diverging_epoch.leader_epoch = answer.diverging.leader_epoch
        data.diverging_epoch.end_offset = answer.diverging.end_offset
