"""Consumer: reads committed records of a topic's partitions, fetching ahead of the application.

A background fetcher (fetcher.py) keeps one long-polling Fetch in flight per leader broker and
buffers the answers undecoded, up to `fetch_buffer_bytes_max`; this thread decodes a partition's
chunk when it reaches it. Records come out in offset order per partition, through iteration
(`for record in consumer`, one at a time) or `poll()` (what is buffered, as a list).

Where to read: `start` (EARLIEST, LATEST or an offset) or `start_timestamp_ms` for every partition
at construction; later `seek`, `seek_to_beginning`, `seek_to_end`, `assign`, with
`offsets_for_times` to find offsets by time. `position(p)` is the next offset this consumer
returns. An offset out of range raises ConsumerError, or, with `reset_out_of_range`, moves (below
the log start, which retention and DeleteRecords move up, to the start the answer carries; above
the log end, to the earliest offset). Leadership changes are followed through Metadata, in the
fetcher. Errors are ConsumerError, with the error code.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import grpc

from replog.client.fetcher import FETCH_SLACK_S, Chunk, Fetcher
from replog.client.metadata import MetadataCache
from replog.client.results import ConsumerError
from replog.common import records as rec
from replog.common.security.files import TlsFiles
from replog.v1 import common_pb2, log_pb2

__all__ = ["EARLIEST", "FETCH_SLACK_S", "LATEST", "Consumer", "ConsumerError", "ConsumerRecord"]

EARLIEST = "earliest"
LATEST = "latest"
TIMESTAMP = "timestamp"  # ListOffsets by timestamp: how start_timestamp_ms finds its offsets
_OFFSET_SPECS = {EARLIEST: log_pb2.OFFSET_SPEC_EARLIEST, LATEST: log_pb2.OFFSET_SPEC_LATEST,
                 TIMESTAMP: log_pb2.OFFSET_SPEC_TIMESTAMP}
LIST_OFFSETS_TIMEOUT_S = 30.0


class ConsumerRecord(NamedTuple):
    """One record read. `timestamp_type` says whose clock `timestamp_ms` is from (the producer's
    CreateTime, or the leader's LogAppendTime); `headers` are (key, value) pairs in the order sent,
    a value None when null. A named tuple: one is built per record read, straight from the bytes."""

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
                 start_timestamp_ms: int | None = None, fetch_buffer_bytes_max: int = 32 * 1024 * 1024,
                 iteration_timeout_ms: int | None = None, tls: TlsFiles | None = None,
                 insecure: bool = False) -> None:
        """`start`: EARLIEST, LATEST or an offset; `start_timestamp_ms` instead starts each partition at its
        first record stamped at or after it (ListOffsets by timestamp), or at its end when there is none.
        `fetch_buffer_bytes_max`: how many fetched bytes may wait to be read (the read-ahead);
        `iteration_timeout_ms`: `for record in consumer` ends after this long without a record
        (default: it waits for good). `tls` and `insecure`: as the Producer takes them."""
        self.metadata = MetadataCache(bootstrap, timeout_s=metadata_timeout_ms / 1000, tls=tls, insecure=insecure)
        self.topic = topic
        self.max_wait_ms = max_wait_ms
        self.reset_out_of_range = reset_out_of_range
        self.iteration_timeout_ms = iteration_timeout_ms
        self.positions: dict[int, int] = {}  # partition -> the next offset this consumer returns
        self._prefixes: dict[int, tuple[str, int]] = {}
        self._seeks = 0  # counts seeks: records decoded before one are not returned after it
        self._fetcher = Fetcher(self.metadata, topic, fetch_max_bytes=fetch_max_bytes, max_wait_ms=max_wait_ms,
                                buffer_bytes_max=fetch_buffer_bytes_max, retry_backoff_s=retry_backoff_ms / 1000,
                                metadata_max_age_s=metadata_max_age_ms / 1000)
        try:
            count = self.metadata.partition_count(topic)
        except KeyError as exc:
            raise ConsumerError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, exc.args[0]) from None
        self.partitions: list[int] = []
        if start_timestamp_ms is not None:
            self._assign(list(range(count)) if partitions is None else list(partitions), 0)  # sought below
            for p, offset in self.offsets_for_times({p: start_timestamp_ms for p in self.partitions}).items():
                self.seek(p, offset if offset is not None else self._list_offset(p, LATEST))
        else:
            self._assign(list(range(count)) if partitions is None else list(partitions), start)
        self._fetcher.start()  # after the first seeks: its first fetches leave from where they say

    # --- where to read -----------------------------------------------------------------------

    def assign(self, partitions: Iterable[int] | dict[int, int], start: str | int = EARLIEST) -> None:
        """Read exactly these partitions of the topic from now on; a partition newly assigned starts at
        `start` (EARLIEST, LATEST or an offset), or, when `partitions` maps partitions to offsets, at its
        own offset; one already assigned keeps its position (and what was fetched ahead for it)."""
        self._assign(partitions if isinstance(partitions, dict) else list(partitions), start)

    def assignment(self) -> list[int]:
        return list(self.partitions)

    def seek(self, partition: int, offset: int) -> None:
        """The next record returned for `partition` is the one at `offset`."""
        if partition not in self._prefixes:
            raise ConsumerError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                                f"partition {partition} of {self.topic} is not assigned (assign it first)")
        if offset < 0:
            raise ValueError(f"an offset is 0 or more, not {offset}")
        self.positions[partition] = offset
        self._seeks += 1
        self._fetcher.seek(partition, offset)

    def seek_to_beginning(self, *partitions: int) -> None:
        for p in partitions or self.partitions:
            self.seek(p, self._list_offset(p, EARLIEST))

    def seek_to_end(self, *partitions: int) -> None:
        for p in partitions or self.partitions:
            self.seek(p, self._list_offset(p, LATEST))

    def position(self, partition: int) -> int:
        """The offset of the next record this consumer returns for `partition`."""
        if partition not in self.positions:
            raise ConsumerError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                                f"partition {partition} of {self.topic} is not assigned")
        return self.positions[partition]

    def offsets_for_times(self, timestamps_ms: dict[int, int]) -> dict[int, int | None]:
        """Per partition, the first offset whose record is stamped at or after the time given, or None
        when no record is (ListOffsets by timestamp, at the partition's leader)."""
        found = {p: self._list_offset(p, TIMESTAMP, t) for p, t in timestamps_ms.items()}
        return {p: (offset if offset >= 0 else None) for p, offset in found.items()}

    def offset_of(self, partition: int, which: str) -> int:
        """The partition's EARLIEST or LATEST offset now (ListOffsets on its leader)."""
        return self._list_offset(partition, which)

    def _assign(self, partitions: list[int] | dict[int, int], start: str | int) -> None:
        for p in [p for p in self.partitions if p not in partitions]:
            self._fetcher.unassign(p)
            self.positions.pop(p, None)
            self._prefixes.pop(p, None)
        for p in partitions:
            if p not in self._prefixes:
                self._prefixes[p] = (self.topic, p)
                offset = (partitions[p] if isinstance(partitions, dict) else
                          start if isinstance(start, int) else self._list_offset(p, start))
                self.seek(p, offset)
        self.partitions = list(partitions)

    # --- reading -----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one at a time, as they come; ends after `iteration_timeout_ms` without one (if set)."""
        wait_s = None if self.iteration_timeout_ms is None else self.iteration_timeout_ms / 1000
        idle_since = time.monotonic()
        positions = self.positions
        while True:
            records = self._next_records(self.max_wait_ms / 1000 if wait_s is None else min(wait_s, 0.5))
            if not records:
                if wait_s is not None and time.monotonic() - idle_since >= wait_s:
                    return
                continue
            seeks = self._seeks
            p = records[0].partition
            for record in records:
                if self._seeks != seeks:
                    break  # a seek while the caller held a record: the rest of this chunk is stale
                positions[p] = record.offset + 1
                yield record
            idle_since = time.monotonic()

    def poll(self, timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """The records read ahead so far (waiting up to `timeout_ms`, default `max_wait_ms`, for some)."""
        records = self._next_records((self.max_wait_ms if timeout_ms is None else timeout_ms) / 1000)
        out: list[ConsumerRecord] = []
        while records:
            self.positions[records[0].partition] = records[-1].offset + 1
            out += records
            records = self._next_records(0)
        return out

    def _next_records(self, timeout_s: float) -> list[ConsumerRecord]:
        """The next buffered chunk's records from this consumer's position on (empty if none came)."""
        deadline = time.monotonic() + timeout_s
        while True:
            chunk = self._fetcher.take(max(deadline - time.monotonic(), 0.0))
            if chunk is None:
                return []
            if not self._fetcher.is_current(chunk):
                continue
            if chunk.error_code != common_pb2.ERROR_CODE_NONE:
                self._out_of_range(chunk)
                continue
            p = chunk.partition
            position = self.positions[p]
            records = rec.decode_records(chunk.records, start_offset=position, record_type=ConsumerRecord,
                                         prefix=self._prefixes[p])
            if records and records[-1].offset >= chunk.high_watermark:
                records = [r for r in records if r.offset < chunk.high_watermark]
            if records:
                return records

    def _out_of_range(self, chunk: Chunk) -> None:
        p = chunk.partition
        if not self.reset_out_of_range:
            raise ConsumerError(chunk.error_code, f"offset {chunk.start_offset} of {self.topic}-{p}: "
                                                  f"{chunk.error_message}")
        below_start = 0 <= chunk.start_offset < chunk.log_start_offset
        self.seek(p, chunk.log_start_offset if below_start else self._list_offset(p, EARLIEST))

    def _list_offset(self, partition: int, which: str, timestamp_ms: int = 0) -> int:
        """The partition's EARLIEST / LATEST offset, or with TIMESTAMP the first at or after
        `timestamp_ms` (-1 when none is)."""
        spec = _OFFSET_SPECS[which]
        deadline = time.monotonic() + LIST_OFFSETS_TIMEOUT_S
        last = "no leader known"
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
                    last = result.error_message or common_pb2.ErrorCode.Name(result.error_code)
                except grpc.RpcError as exc:
                    last = f"{exc.code().name}: {exc.details()}"
            if time.monotonic() > deadline:
                raise ConsumerError(common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
                                    f"no leader answered ListOffsets for {self.topic}-{partition}: {last}")
            time.sleep(0.2)
            try:
                self.metadata.refresh([self.topic])
            except Exception:  # noqa: BLE001 - tried again until the deadline
                pass

    def close(self) -> None:
        self._fetcher.close()
        self.metadata.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _consumer_or_group_consumer(cls, *args, group_id: str | None = None, **kwargs):
    """`Consumer(bootstrap, topics, group_id=G, ...)` builds a consumer in group G (a GroupConsumer, which
    Python then does not initialise again); without `group_id`, the plain consumer above."""
    if group_id is None:
        return object.__new__(cls)
    from replog.client.group.group_consumer import GroupConsumer

    return GroupConsumer(*args, group_id=group_id, **kwargs)


Consumer.__new__ = _consumer_or_group_consumer
