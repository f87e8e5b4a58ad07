"""The coordinator's I/O with its offsets partitions: acks=all appends and a full read on load.

Appends go through the broker's own produce path (`ProduceHandler`, acks=-1), so a commit is
acknowledged only once the ISR has it: exactly the promise an acknowledged record has. The load
reads a partition this broker leads from its log start to the high watermark, once the new
leader's high watermark is settled (it is then at or past every record an earlier leader had
acknowledged, KIP-207), so nothing acknowledged is missed.

Group commit: appends to one offsets partition are made one at a time, and those that arrive while
one is being replicated wait and then go together, as one batch, appended by the first of them
(the others only wait for the answer). Each caller's records stay consecutive, in its order, so
each learns its own base offset; a refusal is every caller's of that batch. A batch takes queued
appends up to `GROUP_BYTES_MAX` of keys and values (at least one append), so it stays well inside
the offsets topic's `max.message.bytes`. Under many concurrent commits one replicated append then
carries many of them, instead of each paying for its own round of follower fetches.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Iterator

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.produce.produce_handler import ProduceHandler
from replog.broker.produce.values import PartitionProduce, ProduceRequest
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import list_offset, read_for_consumer
from replog.common.core.partitions import TopicPartition
from replog.common.records.reading import decode_records

log = logging.getLogger(__name__)

ACKS_ALL = -1
GROUP_BYTES_MAX = 256 * 1024  # keys and values of the appends one batch carries (at least one append)
READ_BYTES_MAX = 1 << 20
LOAD_BATCHES_MAX = 1_000_000  # a bound on the load loop; a partition holding more is a bug elsewhere


class NotReady(Exception):
    """The partition cannot be loaded yet (leadership lost, or its high watermark not settled)."""


class _Append:
    """One caller's records waiting for (or in) a batch."""

    __slots__ = ("records", "size_bytes", "wake", "lead", "done", "refusal", "base_offset")

    def __init__(self, records: list[tuple[bytes, bytes]]) -> None:
        self.records = records
        self.size_bytes = sum(len(k) + len(v) for k, v in records)
        self.wake = threading.Event()  # set once done, or once this caller is to append the next batch
        self.lead = False
        self.done = False
        self.refusal: Refusal | None = None
        self.base_offset = -1


class OffsetsLog:
    def __init__(self, produce: ProduceHandler, lookup: Callable[[TopicPartition], HostedPartition | None],
                 append_timeout_ms: int, now_ms: Callable[[], int]) -> None:
        self._produce = produce
        self._lookup = lookup
        self._append_timeout_ms = append_timeout_ms
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._queued: dict[TopicPartition, list[_Append]] = {}  # a partition is here while an append is made

    def append(self, tp: TopicPartition, records: list[tuple[bytes, bytes]]) -> tuple[Refusal | None, int]:
        """Append (key, value) records, acks=all, consecutive and in order, perhaps in one batch with other
        callers' (module docstring): (None, the offset of the first of them) once replicated."""
        mine = _Append(records)
        with self._lock:
            queue = self._queued.get(tp)
            if queue is None:
                self._queued[tp] = [mine]
                mine.lead = True
            else:
                queue.append(mine)
        if not mine.lead:
            mine.wake.wait()
        if not mine.done:
            self._append_queued(tp)
        return mine.refusal, mine.base_offset

    def _append_queued(self, tp: TopicPartition) -> None:
        """Append what is queued for `tp` (this caller's first) as one batch; then hand the turn on."""
        with self._lock:
            queue = self._queued[tp]
            taken, size_bytes = 0, 0
            while taken < len(queue) and (taken == 0 or size_bytes + queue[taken].size_bytes <= GROUP_BYTES_MAX):
                size_bytes += queue[taken].size_bytes
                taken += 1
            batch, queue[:taken] = queue[:taken], []
        try:
            refusal, base_offset = self._append_now(tp, [record for each in batch for record in each.records])
        except Exception as exc:  # every caller of the batch must get an answer
            log.exception("appending %d commits to %s failed", len(batch), tp)
            refusal, base_offset = Refusal(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"storing in {tp} failed: {exc}"), -1
        for each in batch:
            each.refusal, each.base_offset, each.done = refusal, base_offset if refusal is None else -1, True
            base_offset += len(each.records)
            each.wake.set()
        with self._lock:
            queue = self._queued[tp]
            if queue:
                queue[0].lead = True
                queue[0].wake.set()
            else:
                del self._queued[tp]

    def _append_now(self, tp: TopicPartition, records: list[tuple[bytes, bytes]]) -> tuple[Refusal | None, int]:
        now_ms = self._now_ms()
        request = ProduceRequest(ACKS_ALL, self._append_timeout_ms,
                                 (PartitionProduce(tp, b"", tuple((k, v, now_ms, None) for k, v in records)),),
                                 internal=True)
        answer = self._produce.produce(request)[0]
        if answer.error_code is ErrorCode.NONE:
            return None, answer.base_offset
        if answer.error_code in (ErrorCode.NOT_LEADER, ErrorCode.FENCED_LEADER_EPOCH,
                                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            return Refusal(ErrorCode.NOT_COORDINATOR,
                           f"this broker no longer leads {tp}; call FindCoordinator again"), -1
        return Refusal(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       f"storing in {tp} failed ({answer.error_code.name}: {answer.error_message}); retry"), -1

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        """The leader epoch if this broker leads `tp` now, else None (read without the partition's lock:
        a poll; every read and append below is checked against the epoch again under it)."""
        hosted = self._lookup(tp)
        if hosted is None or not hosted.usable or hosted.replica.leader is None:
            return None
        return hosted.replica.state.leader_epoch

    def read_all(self, tp: TopicPartition, leader_epoch: int) -> Iterator[tuple[int, bytes, bytes]]:
        """Every (offset, key, value) from the log start to the settled high watermark; raises NotReady."""
        hosted = self._lookup(tp)
        if hosted is None:
            raise NotReady(f"{tp} is not hosted here")
        end = list_offset(hosted, spec="latest", timestamp_ms=-1, current_leader_epoch=leader_epoch)
        if end.error_code is not ErrorCode.NONE:
            raise NotReady(f"{tp}: {end.error_code.name} {end.message}")
        start = list_offset(hosted, spec="earliest", timestamp_ms=-1, current_leader_epoch=leader_epoch)
        offset = start.offset
        for _ in range(LOAD_BATCHES_MAX):
            if offset >= end.offset:
                return
            answer = read_for_consumer(hosted, current_leader_epoch=leader_epoch, fetch_offset=offset,
                                       bytes_max=READ_BYTES_MAX)
            if answer.error_code is not ErrorCode.NONE:
                raise NotReady(f"{tp}: {answer.error_code.name} {answer.message}")
            records = decode_records(answer.records, offset)
            if not records:
                raise NotReady(f"{tp}: no records at {offset} below the high watermark {end.offset}")
            for record in records:
                if record.offset >= end.offset:
                    return
                yield record.offset, record.key or b"", record.value
            offset = records[-1].offset + 1
        raise AssertionError(f"{tp}: loading read more than {LOAD_BATCHES_MAX} batches")
