"""A fetcher's ReplicaFetch on the wire: the request built from the positions it names, and the leader's
answer read into domain values.

The follower's edge towards its leader: the fetcher (fetcher.py) and the answer
handling (follower_answers.py) see no protobuf. Each answered partition is read
once, never record by record.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from replog.broker.core.log_view import EpochEndOffset
from replog.broker.replicas.follower_side import FetchPosition
from replog.broker.replication.follower_answers import LeaderAnswer
from replog.common.core.partitions import TopicPartition
from replog.v1 import replication_pb2


class FetchRequest(NamedTuple):
    replica_id: int
    max_wait_ms: int
    bytes_max: int
    partition_bytes_max: int
    broker_epoch: int
    session_id: int  # 0: open a session
    session_epoch: int
    resend: bool
    fetcher_id: int
    fetcher_count: int
    positions: Iterable[tuple[TopicPartition, int, FetchPosition]]  # (partition, its leader epoch, position)


class FetchAnswer(NamedTuple):
    error_code: int  # of the request as a whole
    error_message: str
    session_id: int
    partitions: list[tuple[TopicPartition, LeaderAnswer]]


def fetch_request(request: FetchRequest) -> replication_pb2.ReplicaFetchRequest:
    return replication_pb2.ReplicaFetchRequest(
        replica_id=request.replica_id,
        max_wait_ms=request.max_wait_ms,
        min_bytes=1,
        max_bytes=request.bytes_max,
        replica_broker_epoch=request.broker_epoch,
        session_id=request.session_id,
        session_epoch=request.session_epoch,
        resend=request.resend,
        fetcher_id=request.fetcher_id,
        fetcher_count=request.fetcher_count,
        partitions=[
            replication_pb2.ReplicaFetchPartition(
                topic=tp.topic, partition=tp.partition, current_leader_epoch=leader_epoch,
                fetch_offset=position.fetch_offset, last_fetched_epoch=position.last_fetched_epoch,
                log_start_offset=position.log_start_offset, partition_max_bytes=request.partition_bytes_max,
                known_high_watermark=position.high_watermark,
            )
            for tp, leader_epoch, position in request.positions
        ],
    )


def fetch_answer(response: replication_pb2.ReplicaFetchResponse) -> FetchAnswer:
    partitions = [(TopicPartition(data.topic, data.partition), _leader_answer(data)) for data in response.partitions]
    return FetchAnswer(response.error_code, response.error_message, response.session_id, partitions)


def _leader_answer(data: replication_pb2.ReplicaFetchPartitionData) -> LeaderAnswer:
    diverging = None
    if data.HasField("diverging_epoch"):
        diverging = EpochEndOffset(data.diverging_epoch.leader_epoch, data.diverging_epoch.end_offset)
    return LeaderAnswer(data.error_code, data.error_message, data.high_watermark, data.log_start_offset,
                        data.log_end_offset, data.records, diverging)
