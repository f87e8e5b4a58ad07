"""The produce path's requests and answers as domain values; entrypoints/ converts them to and from protobuf.

Named tuples, built once per partition of a request, never per record.
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.errors import ErrorCode
from replog.common.core.partitions import TopicPartition

# key (None: a null key), value, timestamp_ms, headers ((key, value) pairs, a value None when null; None: none)
Record = tuple[bytes | None, bytes, int, tuple[tuple[str, bytes | None], ...] | None]


class PartitionProduce(NamedTuple):
    """One partition's data: a record batch as sent, or records to encode into one (not both)."""

    topic_partition: TopicPartition
    record_batch: bytes
    records: tuple[Record, ...]


class ProduceRequest(NamedTuple):
    acks: int
    timeout_ms: int  # 0: the broker's request_timeout_ms
    partitions: tuple[PartitionProduce, ...]
    internal: bool = False  # the broker's own write (the group coordinator's); may append to internal topics


class PartitionAnswer(NamedTuple):
    topic_partition: TopicPartition
    error_code: ErrorCode
    error_message: str = ""
    base_offset: int = -1
    log_start_offset: int = 0  # set for an acks=1 answer only
    leader_epoch: int = 0
