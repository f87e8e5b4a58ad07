"""The coordinator's I/O with its offsets partitions: acks=all appends and a full read on load.

Appends go through the broker's own produce path (`ProduceHandler`, acks=-1), so a commit is
acknowledged only once the ISR has it: exactly the promise an acknowledged record has. The load
reads a partition this broker leads from its log start to the high watermark, once the new
leader's high watermark is settled (it is then at or past every record an earlier leader had
acknowledged, KIP-207), so nothing acknowledged is missed.
"""

from __future__ import annotations

from typing import Callable, Iterator

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.produce.produce_handler import ProduceHandler
from replog.broker.produce.values import PartitionProduce, ProduceRequest
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import list_offset, read_for_consumer
from replog.common.core.partitions import TopicPartition
from replog.common.records.reading import decode_records, iter_batches

ACKS_ALL = -1
READ_BYTES_MAX = 1 << 20
LOAD_BATCHES_MAX = 1_000_000  # a bound on the load loop; a partition holding more is a bug elsewhere


class NotReady(Exception):
    """The partition cannot be loaded yet (leadership lost, or its high watermark not settled)."""


class OffsetsLog:
    def __init__(self, produce: ProduceHandler, lookup: Callable[[TopicPartition], HostedPartition | None],
                 append_timeout_ms: int, now_ms: Callable[[], int]) -> None:
        self._produce = produce
        self._lookup = lookup
        self._append_timeout_ms = append_timeout_ms
        self._now_ms = now_ms

    def append(self, tp: TopicPartition, records: list[tuple[bytes, bytes | None]]) -> tuple[Refusal | None, int]:
        """Append (key, value) records in one batch (a value None: a tombstone), acks=all: (None, the batch's base offset) once replicated."""
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
            batch_ends = [header.next_offset for _, header in iter_batches(answer.records)]
            if not batch_ends:
                raise NotReady(f"{tp}: no batch at {offset} below the high watermark {end.offset}")
            for record in decode_records(answer.records, offset):
                if record.offset >= end.offset:
                    return
                yield record.offset, record.key or b"", record.value
            offset = batch_ends[-1]  # past the cleaner's gaps and empty batches too
        raise AssertionError(f"{tp}: loading read more than {LOAD_BATCHES_MAX} batches")
