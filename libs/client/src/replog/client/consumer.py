"""Consumer: reads committed records of topics' partitions, fetching ahead of the application, alone or in a group.

One class, with or without a group (Kafka's KafkaConsumer): iterate it (`for record in consumer`,
one at a time) or `poll()` (what is buffered, as a list); `assignment()`, `position(tp)`,
`seek(tp, offset)`, `pause`/`resume` and `offsets_for_times` work the same either way. Without
`group_id` it reads the partitions it is given (`partitions`, `assign`), from `start` or
`start_timestamp_ms`. With `group_id` the group decides its partitions (group/coordination.py):
each starts at the group's committed offset, or where `auto_offset_reset` says; `commit`,
`commit_async` and `committed` store and read the group's offsets; `on_assign` / `on_revoke` hear of
rebalances. Partitions are `TopicPartition`s; a method taking one also takes a bare partition number
when the consumer reads one topic.

A background fetcher (fetcher.py) keeps one long-polling Fetch in flight per leader broker and
buffers the answers undecoded, up to `fetch_buffer_bytes_max`; this thread decodes a partition's
chunk when it reaches it. Records come out in offset order per partition. `position(tp)` is the
next offset this consumer returns. An offset out of range raises ConsumerError, or, with
`reset_out_of_range`, moves (below the log start, which retention and DeleteRecords move up, to the
start the answer carries; above the log end, to the earliest offset). Leadership changes are
followed through Metadata, in the fetcher, which also validates positions against a new leader's
log (KIP-320): when records this consumer returned were truncated away (an unclean election),
`on_truncation` says what happens: "reset" moves to where the logs diverge (the records there are
the new history, returned next), "raise" raises TruncationError naming that offset. Errors are
ConsumerError (GroupError for the group's), with the error code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Callable, NamedTuple

import grpc

from replog.client.fetcher import FETCH_SLACK_S, NO_EPOCH, TRUNCATED, Chunk, Fetcher
from replog.client.metadata import MetadataCache
from replog.client.results import ConsumerError, GroupError, TruncationError, UnknownTopicError
from replog.common import records as rec
from replog.common.core.partitions import TopicPartition
from replog.common.security.files import TlsFiles
from replog.v1 import common_pb2, log_pb2

__all__ = ["EARLIEST", "FETCH_SLACK_S", "LATEST", "NONE", "RAISE", "RESET", "Consumer", "ConsumerError",
           "ConsumerRecord", "GroupError", "TopicPartition", "TruncationError"]

log = logging.getLogger(__name__)

EARLIEST = "earliest"
LATEST = "latest"
NONE = "none"  # auto_offset_reset: no committed offset is an error
TIMESTAMP = "timestamp"  # ListOffsets by timestamp: how start_timestamp_ms finds its offsets
RESET = "reset"
RAISE = "raise"
TRUNCATION_POLICIES = (RESET, RAISE)
_OFFSET_SPECS = {EARLIEST: log_pb2.OFFSET_SPEC_EARLIEST, LATEST: log_pb2.OFFSET_SPEC_LATEST,
                 TIMESTAMP: log_pb2.OFFSET_SPEC_TIMESTAMP}
LIST_OFFSETS_TIMEOUT_S = 30.0
GROUP_METADATA_MAX_AGE_MS = 30_000  # a group's leader looks for new partitions this often

Callback = Callable[[list[TopicPartition]], None]
PartitionLike = TopicPartition | int


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


class _Positions(dict):
    """Partition -> the next offset the consumer returns, keyed by TopicPartition; a consumer of one topic
    also finds a bare partition number (`positions[3]`), as it did before it read several topics."""

    def __init__(self, topics: list[str]) -> None:
        super().__init__()
        self._only = topics[0] if len(topics) == 1 else None

    def __missing__(self, key):
        if isinstance(key, int) and self._only is not None:
            return self[TopicPartition(self._only, key)]
        raise KeyError(key)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


def _position_past(chunk: Chunk, position: int) -> int:
    """The position once a chunk's records (if any) were returned: past its last batch, up to the high
    watermark. That may lie past its last record: a compacted log's cleaner leaves gaps and empty batches
    (records/batch.py). The position moves past them, as the fetcher did, so that a reader waiting for it
    to reach an offset, and a commit of it, do not stay behind."""
    if not chunk.batch_ends:
        return position
    return max(position, min(chunk.batch_ends[-1][1], chunk.high_watermark))


class Consumer:
    def __init__(self, bootstrap: str | list[str], topic: str | list[str], *, group_id: str | None = None,
                 partitions: list[int] | None = None, start: str | int = EARLIEST,
                 fetch_max_bytes: int = 4 * 1024 * 1024, max_wait_ms: int = 500, reset_out_of_range: bool = False,
                 retry_backoff_ms: int = 200, metadata_max_age_ms: int | None = None,
                 metadata_timeout_ms: int = 1000, start_timestamp_ms: int | None = None,
                 fetch_buffer_bytes_max: int = 32 * 1024 * 1024, iteration_timeout_ms: int | None = None,
                 tls: TlsFiles | None = None, insecure: bool = False, on_truncation: str | None = None,
                 auto_offset_reset: str = LATEST, enable_auto_commit: bool = True,
                 auto_commit_interval_ms: int = 5000, on_assign: Callback | None = None,
                 on_revoke: Callback | None = None, assignors: tuple[str, ...] | None = None,
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 3_000,
                 rebalance_timeout_ms: int = 30_000, client_id: str = "replog-consumer") -> None:
        """`bootstrap`: broker addresses (a list, or "host:port[,host:port]"); `topic`: one topic or a list.

        Without `group_id`: `partitions` (default all of the topic's; one topic only), from `start`
        (EARLIEST, LATEST or an offset) or `start_timestamp_ms` (each partition at its first record
        stamped at or after it, or at its end when there is none). With `group_id`: the group assigns
        the partitions; `auto_offset_reset` (earliest, latest, none) says where one without a committed
        offset starts; `enable_auto_commit` commits the positions every `auto_commit_interval_ms` (and on
        revocation and close); `on_assign` / `on_revoke(partitions)` are called from the thread that
        iterates or polls; `assignors`, `session_timeout_ms`, `heartbeat_interval_ms`,
        `rebalance_timeout_ms`, `client_id`: the membership's (group/membership.py).

        `fetch_buffer_bytes_max`: how many fetched bytes may wait to be read (the read-ahead);
        `iteration_timeout_ms`: `for record in consumer` ends after this long without a record
        (default: it waits for good); `on_truncation`: "reset" or "raise" when records returned were
        truncated away (default: "reset" with `reset_out_of_range` or a group's auto_offset_reset
        other than none, else "raise"). `tls` and `insecure`: as the Producer takes them."""
        topics = [topic] if isinstance(topic, str) else list(topic)
        if not topics:
            raise ValueError("name at least one topic")
        if group_id is not None and (partitions is not None or start_timestamp_ms is not None or start != EARLIEST):
            raise ValueError("a consumer in a group reads the partitions the group assigns, from the committed "
                             "offsets: it takes no partitions, start or start_timestamp_ms (auto_offset_reset says "
                             "where a partition without a committed offset starts)")
        if partitions is not None and len(topics) > 1:
            raise ValueError("partitions name partitions of one topic; use assign([TopicPartition(...)]) for several")
        if on_truncation is None:
            resets = auto_offset_reset != NONE if group_id is not None else reset_out_of_range
            on_truncation = RESET if resets else RAISE
        if on_truncation not in TRUNCATION_POLICIES:
            raise ValueError(f"on_truncation {on_truncation!r}: expected one of {', '.join(TRUNCATION_POLICIES)}")
        if metadata_max_age_ms is None:
            metadata_max_age_ms = GROUP_METADATA_MAX_AGE_MS if group_id is not None else 300_000
        self.metadata = MetadataCache(bootstrap, timeout_s=metadata_timeout_ms / 1000, tls=tls, insecure=insecure)
        self.topics = topics
        self.topic = topics[0]
        self.max_wait_ms = max_wait_ms
        self.reset_out_of_range = reset_out_of_range
        self.on_truncation = on_truncation
        self.iteration_timeout_ms = iteration_timeout_ms
        self.positions: _Positions = _Positions(topics)  # partition -> the next offset this consumer returns
        self._assigned: list[TopicPartition] = []
        self._paused: set[TopicPartition] = set()
        self._batch_ends: dict[TopicPartition, tuple[tuple[int, int, int], ...]] = {}  # of the last chunk read
        self._seeks = 0  # counts seeks: records decoded before one are not returned after it
        self._taken: TopicPartition | None = None  # the partition of the records _next_records returned last
        self._taken_end = 0  # where the position goes once they are all returned (`_position_past`)
        self._rebalanced_at = float("-inf")  # time.monotonic() when the group last rebalanced this member
        self._fetcher = Fetcher(self.metadata, fetch_max_bytes=fetch_max_bytes, max_wait_ms=max_wait_ms,
                                buffer_bytes_max=fetch_buffer_bytes_max, retry_backoff_s=retry_backoff_ms / 1000,
                                metadata_max_age_s=metadata_max_age_ms / 1000)
        counts = {t: self._partition_count(t) for t in topics}
        self._group = None
        if group_id is not None:
            from replog.client.group.coordination import GroupCoordination

            self._group = GroupCoordination(
                self, group_id, auto_offset_reset=auto_offset_reset, enable_auto_commit=enable_auto_commit,
                auto_commit_interval_ms=auto_commit_interval_ms, on_assign=on_assign, on_revoke=on_revoke,
                assignors=assignors, session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms, rebalance_timeout_ms=rebalance_timeout_ms,
                client_id=client_id, metadata_max_age_ms=metadata_max_age_ms)
        elif start_timestamp_ms is not None:
            wanted = [TopicPartition(self.topic, p) for p in (partitions if partitions is not None
                                                              else range(counts[self.topic]))]
            self._assign(wanted, 0)  # sought below
            for tp, offset in self.offsets_for_times({tp: start_timestamp_ms for tp in wanted}).items():
                self.seek(tp, offset if offset is not None else self._list_offset(tp, LATEST))
        else:
            if partitions is not None:
                wanted = [TopicPartition(self.topic, p) for p in partitions]
            else:
                wanted = [TopicPartition(t, p) for t in topics for p in range(counts[t])]
            self._assign(wanted, start)
        self._fetcher.start()  # after the first seeks: its first fetches leave from where they say

    def _partition_count(self, topic: str) -> int:
        try:
            return self.metadata.partition_count(topic)
        except KeyError as exc:
            self.metadata.close()
            raise UnknownTopicError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, exc.args[0]) from None

    # --- partitions --------------------------------------------------------------------------

    def _tp(self, partition: PartitionLike) -> TopicPartition:
        """`partition` as a TopicPartition: itself, or a bare number of the one topic this consumer reads."""
        if isinstance(partition, TopicPartition):
            return partition
        if isinstance(partition, tuple) and len(partition) == 2:
            return TopicPartition(*partition)
        if len(self.topics) != 1:
            raise ValueError(f"this consumer reads {len(self.topics)} topics: name a TopicPartition, not {partition!r}")
        return TopicPartition(self.topic, partition)

    def assignment(self) -> list[TopicPartition]:
        """The partitions this consumer reads now (a group's member: those the group gave it)."""
        return list(self._assigned)

    def assign(self, partitions: Iterable[PartitionLike] | dict, start: str | int = EARLIEST) -> None:
        """Read exactly these partitions from now on; a partition newly assigned starts at `start`
        (EARLIEST, LATEST or an offset), or, when `partitions` maps partitions to offsets, at its
        own offset; one already assigned keeps its position (and what was fetched ahead for it).
        Not for a consumer in a group, whose partitions the group assigns."""
        if self._group is not None:
            raise ConsumerError(common_pb2.ERROR_CODE_INVALID_REQUEST,
                                f"consumer in group {self._group.group_id}: the group assigns its partitions")
        if isinstance(partitions, dict):
            self._assign({self._tp(p): offset for p, offset in partitions.items()}, start)
        else:
            self._assign([self._tp(p) for p in partitions], start)

    def seek(self, partition: PartitionLike, offset: int) -> None:
        """The next record returned for `partition` is the one at `offset`."""
        self._seek(self._tp(partition), offset, NO_EPOCH)

    def _seek(self, tp: TopicPartition, offset: int, leader_epoch: int) -> None:
        if tp not in self.positions:
            raise ConsumerError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                                f"partition {tp} is not assigned" + ("" if self._group else " (assign it first)"))
        if offset < 0:
            raise ValueError(f"an offset is 0 or more, not {offset}")
        self.positions[tp] = offset
        self._batch_ends.pop(tp, None)
        self._seeks += 1
        self._fetcher.seek(tp, offset, leader_epoch)

    def seek_to_beginning(self, *partitions: PartitionLike) -> None:
        for tp in [self._tp(p) for p in partitions] or self._assigned:
            self.seek(tp, self._list_offset(tp, EARLIEST))

    def seek_to_end(self, *partitions: PartitionLike) -> None:
        for tp in [self._tp(p) for p in partitions] or self._assigned:
            self.seek(tp, self._list_offset(tp, LATEST))

    def position(self, partition: PartitionLike) -> int:
        """The offset of the next record this consumer returns for `partition`."""
        tp = self._tp(partition)
        if tp not in self.positions:
            raise ConsumerError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, f"partition {tp} is not assigned")
        return self.positions[tp]

    def pause(self, *partitions: PartitionLike) -> None:
        """Return no records of these partitions (and fetch none) until `resume`; what was read ahead waits."""
        for tp in map(self._tp, partitions):
            self._paused.add(tp)
            self._fetcher.pause(tp)

    def resume(self, *partitions: PartitionLike) -> None:
        for tp in map(self._tp, partitions):
            self._paused.discard(tp)
            self._fetcher.resume(tp)

    def paused(self) -> list[TopicPartition]:
        return sorted(tp for tp in self._paused if tp in self.positions)

    def offsets_for_times(self, timestamps_ms: dict) -> dict:
        """Per partition, the first offset whose record is stamped at or after the time given, or None
        when no record is (ListOffsets by timestamp, at the partition's leader). Keyed as given."""
        found = {p: self._list_offset(self._tp(p), TIMESTAMP, t) for p, t in timestamps_ms.items()}
        return {p: (offset if offset >= 0 else None) for p, offset in found.items()}

    def offset_of(self, partition: PartitionLike, which: str) -> int:
        """The partition's EARLIEST or LATEST offset now (ListOffsets on its leader)."""
        return self._list_offset(self._tp(partition), which)

    def _assign(self, partitions: list[TopicPartition] | dict, start: str | int) -> None:
        """Exactly these partitions (a dict: each at its offset, or (offset, leader epoch)) from now on."""
        for tp in [tp for tp in self._assigned if tp not in partitions]:
            self._unassign(tp)
        for tp in partitions:
            if tp not in self.positions:
                self.positions[tp] = 0
                epoch = NO_EPOCH
                if isinstance(partitions, dict):
                    offset = partitions[tp]
                    if isinstance(offset, tuple):
                        offset, epoch = offset
                else:
                    offset = start if isinstance(start, int) else self._list_offset(tp, start)
                self._seek(tp, offset, epoch)
        self._assigned = list(partitions)

    def _unassign(self, tp: TopicPartition) -> None:
        self._fetcher.unassign(tp)
        self.positions.pop(tp, None)
        self._batch_ends.pop(tp, None)
        self._paused.discard(tp)

    # --- reading -----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one at a time, as they come; ends after `iteration_timeout_ms` without one (if set)."""
        wait_s = None if self.iteration_timeout_ms is None else self.iteration_timeout_ms / 1000
        idle_since = time.monotonic()
        positions = self.positions
        while True:
            records = self._next_records(self.max_wait_ms / 1000 if wait_s is None else min(wait_s, 0.5))
            if not records:
                idle_since = max(idle_since, self._rebalanced_at)  # a rebalance is not idleness
                if wait_s is not None and time.monotonic() - idle_since >= wait_s:
                    return
                continue
            seeks = self._seeks
            tp = self._taken
            taken_end = self._taken_end
            for record in records:
                if self._seeks != seeks:
                    break  # a seek while the caller held a record: the rest of this chunk is stale
                positions[tp] = record.offset + 1
                yield record
            if self._seeks == seeks:
                positions[tp] = max(positions[tp], taken_end)
            idle_since = time.monotonic()

    def poll(self, timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """The records read ahead so far (waiting up to `timeout_ms`, default `max_wait_ms`, for some)."""
        records = self._next_records((self.max_wait_ms if timeout_ms is None else timeout_ms) / 1000)
        out: list[ConsumerRecord] = []
        while records:
            self.positions[self._taken] = max(records[-1].offset + 1, self._taken_end)
            out += records
            records = self._next_records(0)
        return out

    def _next_records(self, timeout_s: float) -> list[ConsumerRecord]:
        """The next buffered chunk's records from this consumer's position on (empty if none came);
        `_taken` is their partition. A group's member keeps up with its group first (and every 0.5 s); the
        wait starts again after a rebalance, which may take longer than the wait (a group's first join)."""
        deadline = time.monotonic() + timeout_s
        group = self._group
        while True:
            if group is not None:
                if group.maintain():
                    self._rebalanced_at = time.monotonic()
                    deadline = self._rebalanced_at + timeout_s
                if not self._assigned:
                    if not group.wait_for_partitions(max(deadline - time.monotonic(), 0.0)):
                        return []
                    continue
            remaining = max(deadline - time.monotonic(), 0.0)
            chunk = self._fetcher.take(remaining if group is None else min(remaining, 0.5))
            if chunk is None:
                if time.monotonic() >= deadline:
                    return []
                continue
            if not self._fetcher.is_current(chunk):
                continue
            if chunk.error_code != common_pb2.ERROR_CODE_NONE:
                if chunk.error_code == TRUNCATED:
                    self._diverged(chunk)
                else:
                    self._out_of_range(chunk)
                continue
            tp = chunk.tp
            position = self.positions[tp]
            records = rec.decode_records(chunk.records, start_offset=position, record_type=ConsumerRecord,
                                         prefix=tp)
            if records and records[-1].offset >= chunk.high_watermark:
                records = [r for r in records if r.offset < chunk.high_watermark]
            end = _position_past(chunk, position)
            if records:
                self._batch_ends[tp] = chunk.batch_ends
                self._taken, self._taken_end = tp, end
                return records
            if end > position:
                self.positions[tp] = end
                self._batch_ends[tp] = chunk.batch_ends

    def _out_of_range(self, chunk: Chunk) -> None:
        tp = chunk.tp
        if not self.reset_out_of_range:
            raise ConsumerError(chunk.error_code, f"offset {chunk.start_offset} of {tp}: {chunk.error_message}")
        below_start = 0 <= chunk.start_offset < chunk.log_start_offset
        self.seek(tp, chunk.log_start_offset if below_start else self._list_offset(tp, EARLIEST))

    def _diverged(self, chunk: Chunk) -> None:
        """The leader's log diverges from what was fetched at `chunk.divergent_offset` (fetcher.py). Only
        if this consumer returned records at or past it were they truncated away; else it refetches
        from its position, and the records read ahead past the divergence are forgotten."""
        tp, divergent = chunk.tp, chunk.divergent_offset
        position = self.positions[tp]
        if position <= divergent:
            self._seek(tp, position, NO_EPOCH)
            return
        message = (f"{tp}: records {divergent} to {position - 1} this consumer returned are no longer in the "
                   f"log ({chunk.error_message}; an unclean leader election?)")
        if self.on_truncation == RAISE:
            raise TruncationError({tp: divergent}, message + f"; seek to go on (from {divergent}: the new history)")
        log.warning("%s; reading on from %d", message, divergent)
        self._seek(tp, divergent, NO_EPOCH)

    def position_leader_epoch(self, partition: PartitionLike) -> int:
        """The leader epoch of the record before the position (of the last one returned), or -1 when not
        known: what a commit stores with the offset, for a later consumer to validate (KIP-320)."""
        tp = self._tp(partition)
        before = self.positions.get(tp, 0) - 1
        for base, next_offset, epoch in self._batch_ends.get(tp, ()):
            if base <= before < next_offset:
                return epoch
        return NO_EPOCH

    def _list_offset(self, tp: TopicPartition, which: str, timestamp_ms: int = 0) -> int:
        """The partition's EARLIEST / LATEST offset, or with TIMESTAMP the first at or after
        `timestamp_ms` (-1 when none is)."""
        spec = _OFFSET_SPECS[which]
        deadline = time.monotonic() + LIST_OFFSETS_TIMEOUT_S
        last = "no leader known"
        while True:
            leader = self.metadata.leader_address(tp.topic, tp.partition)
            if leader is not None:
                try:
                    reply = self.metadata.stub(leader[0]).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
                        log_pb2.ListOffsetsPartition(topic=tp.topic, partition=tp.partition, spec=spec,
                                                     timestamp_ms=timestamp_ms, current_leader_epoch=leader[1])]),
                        timeout=10)
                    result = reply.partitions[0]
                    if result.error_code == common_pb2.ERROR_CODE_NONE:
                        return result.offset
                    last = result.error_message or common_pb2.ErrorCode.Name(result.error_code)
                except grpc.RpcError as exc:
                    last = f"{exc.code().name}: {exc.details()}"
            if time.monotonic() > deadline:
                raise ConsumerError(common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
                                    f"no leader answered ListOffsets for {tp}: {last}")
            time.sleep(0.2)
            try:
                self.metadata.refresh(self._fetcher.topics() or self.topics)
            except Exception:  # noqa: BLE001 - tried again until the deadline
                pass

    # --- the group's offsets -----------------------------------------------------------------

    @property
    def group_id(self) -> str | None:
        return None if self._group is None else self._group.group_id

    @property
    def generation_id(self) -> int:
        return -1 if self._group is None else self._group.generation_id

    def commit(self, offsets: dict | None = None) -> None:
        """Store `offsets` (partition -> the next offset to read) as the group's, by default the position
        of every assigned partition (the offset after the last record returned); raises GroupError."""
        self._in_group("commit").commit(None if offsets is None else {self._tp(p): o for p, o in offsets.items()})

    def commit_async(self, offsets: dict | None = None,
                     callback: Callable[[dict, BaseException | None], None] | None = None) -> Future:
        """`commit()` on a background thread (the offsets are taken now); the future holds None or the
        GroupError, and `callback(offsets, error)` runs when it is done."""
        chosen = None if offsets is None else {self._tp(p): o for p, o in offsets.items()}
        return self._in_group("commit").commit_async(chosen, callback)

    def committed(self, partitions: Iterable[PartitionLike]) -> dict[TopicPartition, int]:
        """The group's committed offsets of these partitions (those without one are left out)."""
        return self._in_group("committed").committed([self._tp(p) for p in partitions])

    def _in_group(self, what: str):
        if self._group is None:
            raise ConsumerError(common_pb2.ERROR_CODE_INVALID_REQUEST,
                                f"{what} needs a group: build the Consumer with group_id=...")
        return self._group

    def close(self) -> None:
        try:
            if self._group is not None:
                self._group.close()
        finally:
            self._fetcher.close()
            self.metadata.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

