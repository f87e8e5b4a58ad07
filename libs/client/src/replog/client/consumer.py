"""Consumer: reads committed records of partitions from chosen offsets.

`poll()` sends one long-polling Fetch per leader broker and returns decoded
records in offset order per partition. Leadership changes are followed through
Metadata; an offset out of range is reported (or reset, when asked: below the
log start, which retention and DeleteRecords move up, to the start the answer
carries; above the log end, to the earliest offset).

Metadata is refreshed after a failed fetch or a partition error, every
`retry_backoff_ms` while a partition read has no known leader (it is skipped
meanwhile, and read again as soon as metadata names one: a broker back from a
crash), and every `metadata_max_age_ms` in any case.

A Fetch gets `FETCH_SLACK_S` past its long-poll wait to be answered. A leader that stopped
answering without closing its connections (paused, cut off) thus costs a poll that much
before the consumer refreshes metadata and moves on, rather than the partitions of every
leader waiting behind it for many seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import grpc

from replog.client.metadata import MetadataCache
from replog.client.results import ProduceError
from replog.common import records as rec
from replog.common.security.files import TlsFiles
from replog.v1 import common_pb2, log_pb2

EARLIEST = "earliest"
LATEST = "latest"
TIMESTAMP = "timestamp"  # ListOffsets by timestamp: how start_timestamp_ms finds its offsets
_OFFSET_SPECS = {EARLIEST: log_pb2.OFFSET_SPEC_EARLIEST, LATEST: log_pb2.OFFSET_SPEC_LATEST,
                 TIMESTAMP: log_pb2.OFFSET_SPEC_TIMESTAMP}
# A broker answers a long poll when its wait ends: this much later, the leader is taken as gone
# (a slow answer only costs one poll and a metadata refresh; nothing is skipped or read twice).
FETCH_SLACK_S = 2.0


@dataclass(frozen=True)
class ConsumerRecord:
    """One record read. `timestamp_type` says whose clock `timestamp_ms` is from (the producer's
    CreateTime, or the leader's LogAppendTime); `headers` are (key, value) pairs in the order sent,
    a value None when null."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_type: rec.TimestampType = rec.TimestampType.CREATE_TIME


class Consumer:
    def __init__(self, bootstrap: list[str], topic: str, *, partitions: list[int] | None = None,
                 start: str | int = EARLIEST, fetch_max_bytes: int = 4 * 1024 * 1024,
                 max_wait_ms: int = 500, reset_out_of_range: bool = False, retry_backoff_ms: int = 200,
                 metadata_max_age_ms: int = 300_000, metadata_timeout_ms: int = 1000,
                 start_timestamp_ms: int | None = None, tls: TlsFiles | None = None, insecure: bool = False) -> None:
        """`start`: EARLIEST, LATEST or an offset; `start_timestamp_ms` instead starts each partition at its
        first record stamped at or after it (ListOffsets by timestamp), or at its end when there is none.
        `tls` and `insecure`: as the Producer takes them."""
        self.metadata = MetadataCache(bootstrap, timeout_s=metadata_timeout_ms / 1000, tls=tls, insecure=insecure)
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.metadata_max_age_s = metadata_max_age_ms / 1000
        self._metadata_due_s = time.monotonic() + self.metadata_max_age_s
        self._metadata_tried_at_s = float("-inf")
        self.topic = topic
        count = self.metadata.partition_count(topic)
        self.partitions = list(range(count)) if partitions is None else list(partitions)
        self.fetch_max_bytes = fetch_max_bytes
        self.max_wait_ms = max_wait_ms
        self.reset_out_of_range = reset_out_of_range
        self.positions: dict[int, int] = {}
        for p in self.partitions:
            if start_timestamp_ms is not None:
                found = self._list_offset(p, TIMESTAMP, start_timestamp_ms)
                self.positions[p] = found if found >= 0 else self._list_offset(p, LATEST)
            else:
                self.positions[p] = start if isinstance(start, int) else self._list_offset(p, start)

    def _list_offset(self, partition: int, which: str, timestamp_ms: int = 0) -> int:
        """The partition's EARLIEST / LATEST offset, or with TIMESTAMP the first at or after
        `timestamp_ms` (-1 when none is)."""
        spec = _OFFSET_SPECS[which]
        deadline = time.monotonic() + 30
        while True:
            leader = self.metadata.leader_address(self.topic, partition)
            if leader is not None:
                try:
                    reply = self.metadata.stub(leader[0]).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
                        log_pb2.ListOffsetsPartition(topic=self.topic, partition=partition, spec=spec,
                                                     timestamp_ms=timestamp_ms, current_leader_epoch=-1)]), timeout=10)
                    result = reply.partitions[0]
                    if result.error_code == common_pb2.ERROR_CODE_NONE:
                        return result.offset
                except grpc.RpcError:
                    pass
            if time.monotonic() > deadline:
                raise ProduceError(common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
                                   f"no leader answered ListOffsets for {self.topic}-{partition}")
            time.sleep(0.2)
            self._refresh_quietly()

    def poll(self, timeout_ms: int | None = None) -> list[ConsumerRecord]:
        wait_ms = self.max_wait_ms if timeout_ms is None else timeout_ms
        if time.monotonic() >= self._metadata_due_s:
            self._refresh_quietly()
        by_leader: dict[str, list[int]] = {}
        for p in self.partitions:
            leader = self.metadata.leader_address(self.topic, p)
            if leader is None:
                self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)  # until it has one
                continue
            by_leader.setdefault(leader[0], []).append(p)
        if not by_leader:
            time.sleep(min(wait_ms, 200) / 1000)
            return []
        out: list[ConsumerRecord] = []
        for address, partitions in by_leader.items():
            request = log_pb2.FetchRequest(
                max_wait_ms=wait_ms, min_bytes=1, max_bytes=self.fetch_max_bytes,
                partitions=[log_pb2.FetchPartition(topic=self.topic, partition=p, fetch_offset=self.positions[p],
                                                   current_leader_epoch=-1) for p in partitions],
            )
            try:
                reply = self.metadata.stub(address).Fetch(request, timeout=wait_ms / 1000 + FETCH_SLACK_S)
            except grpc.RpcError:
                self.metadata.mark_unreachable(address)
                self._refresh_quietly()
                continue
            for data in reply.partitions:
                out.extend(self._accept(data))
        return out

    def _accept(self, data) -> list[ConsumerRecord]:
        p = data.partition
        if data.error_code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE:
            if not self.reset_out_of_range:
                raise ProduceError(data.error_code, f"offset {self.positions[p]} of {self.topic}-{p}: "
                                                    f"{data.error_message}")
            below_start = 0 <= self.positions[p] < data.log_start_offset
            self.positions[p] = data.log_start_offset if below_start else self._list_offset(p, EARLIEST)
            return []
        if data.error_code != common_pb2.ERROR_CODE_NONE:
            self._refresh_quietly()
            return []
        records = rec.decode_records(data.records, start_offset=self.positions[p]) if data.records else []
        records = [r for r in records if r.offset < data.high_watermark]
        if records:
            self.positions[p] = records[-1].offset + 1
        return [ConsumerRecord(self.topic, p, r.offset, r.key, r.value, r.timestamp_ms, r.headers, r.timestamp_type)
                for r in records]

    def _refresh_by(self, due_s: float) -> None:
        self._metadata_due_s = min(self._metadata_due_s, due_s)

    def _refresh_quietly(self) -> None:
        self._metadata_tried_at_s = time.monotonic()
        self._metadata_due_s = self._metadata_tried_at_s + self.metadata_max_age_s
        try:
            self.metadata.refresh([self.topic])
        except Exception:  # noqa: BLE001 - the next poll tries again
            self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)

    def close(self) -> None:
        self.metadata.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the hook for consumer groups (replog.client.group): the group, not the constructor, decides ----
    # which partitions this consumer reads and from where. Nothing above depends on it.

    def assign(self, positions: dict[int, int]) -> None:
        """Read exactly these partitions of `topic`, each from the offset given."""
        self.partitions = sorted(positions)
        self.positions = dict(positions)

    def offset_of(self, partition: int, which: str) -> int:
        """The partition's EARLIEST or LATEST offset (ListOffsets on its leader)."""
        return self._list_offset(partition, which)


def _consumer_or_group_consumer(cls, *args, group_id: str | None = None, **kwargs):
    """`Consumer(bootstrap, topics, group_id=G, ...)` builds a consumer in group G (a GroupConsumer, which
    Python then does not initialise again); without `group_id`, the plain consumer above."""
    if group_id is None:
        return object.__new__(cls)
    from replog.client.group.group_consumer import GroupConsumer

    return GroupConsumer(*args, group_id=group_id, **kwargs)


Consumer.__new__ = _consumer_or_group_consumer
