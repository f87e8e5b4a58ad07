"""Produce, end to end on the leader: validate, append, and for acks=-1 wait for the HW.

Theory of operation (docs/architecture.md, "Produce"; core/produce/produce.py order):

1. Request checks: acks must be 0, 1 or -1 (else every partition gets
   INVALID_REQUIRED_ACKS and nothing is appended); a partition named twice
   is INVALID_REQUEST.
2. Per partition, outside any lock: the batch is `record_batch` as sent (bytes
   end to end) or built once from the records sent decoded; it is validated once
   (`validate_batch`: size, CRC-32C, codec, record framing and headers, on the
   expanded records of a compressed batch) -> RECORD_TOO_LARGE / CORRUPT_RECORD (a
   batch that does not expand too), UNSUPPORTED_COMPRESSION_TYPE for an unknown codec
   (bad headers sent decoded: INVALID_REQUEST). For a topic whose compression.type is
   not `producer` a batch of another codec is compressed with the topic's (and checked
   against the size limits again). For a topic with
   message.timestamp.type=LogAppendTime the batch is then stamped with this
   broker's clock (`with_log_append_time`); a producer's batch that claims that
   stamp itself is CORRUPT_RECORD. Unknown partition -> UNKNOWN_TOPIC_OR_PARTITION (or
   NOT_LEADER when the cluster has it but this broker does not host it).
3. Under the partition lock (leader_side.append_produced): leadership,
   min.insync.replicas for acks=-1 (NOT_ENOUGH_REPLICAS before any append),
   the idempotence check (a retry is answered with its original offsets), the
   append, the producer state, the HW. A refused partition changes nothing.
4. acks=0/1 answer now; acks=-1 waits in the delayed produces until the HW
   passes every appended batch (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when
   the ISR shrank below the minimum meanwhile), leadership is lost
   (NOT_LEADER) or the timeout passes (REQUEST_TIMED_OUT). An acks=-1 request
   first takes a wait slot (wait_slots.py); with none free it is refused with
   REQUEST_TIMED_OUT before anything is appended.

Requests and answers are domain values (values.py); the servicer converts them
(entrypoints/produce_edge.py). Answers come in the request's partition order;
an acks=0 request is answered with none.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from replog.broker.control.topic_configs import TopicConfigs
from replog.broker.core.effects import Effects
from replog.broker.core.errors import ErrorCode
from replog.broker.core.produce.produce import ACKS_ALL, ACKS_NONE, VALID_ACKS, ProduceResult, ProduceWait
from replog.broker.produce.delayed_produces import DelayedProduces
from replog.broker.produce.values import PartitionAnswer, PartitionProduce, ProduceRequest
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import append_produced
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.turn import Turn
from replog.broker.runtime.wait_slots import WaitSlots
from replog.common.clock import Clock
from replog.common.core.internal_topics import is_internal
from replog.common.core.partitions import TopicPartition
from replog.common.records import (
    ATTRIBUTE_LOG_APPEND_TIME,
    BatchHeader,
    CorruptRecordError,
    RecordTooLargeError,
    UnsupportedCompressionError,
    encode_batch,
    recompressed,
    validate_batch,
    with_log_append_time,
)

PRODUCE_TIMEOUT_MS_MAX = 300_000


class ProduceHandler:
    def __init__(
        self,
        *,
        lookup: Callable[[TopicPartition], HostedPartition | None],
        is_known: Callable[[str, int], bool],
        topic_configs: TopicConfigs,
        delayed_produces: DelayedProduces,
        metrics: BrokerMetrics,
        batch_bytes_max: int,
        request_timeout_ms: int,
        wait_slots: WaitSlots,
        turn: Turn,
        clock: Clock,
    ) -> None:
        self._turn = turn
        self._clock = clock
        self._lookup = lookup
        self._is_known = is_known  # the partition exists in the cluster (the Metadata answers' cache)
        self._topic_configs = topic_configs
        self._delayed = delayed_produces
        self._metrics = metrics
        self._batch_bytes_max = batch_bytes_max
        self._request_timeout_ms = request_timeout_ms
        self._wait_slots = wait_slots

    def produce(self, request: ProduceRequest) -> list[PartitionAnswer]:
        if request.acks != ACKS_ALL:
            return self._produce(request)
        if not self._wait_slots.try_take():
            self._metrics.produce_errors.labels(ErrorCode.REQUEST_TIMED_OUT.name).inc(len(request.partitions))
            message = (f"this broker already holds {self._wait_slots.capacity} requests waiting for replication; "
                       "nothing was appended, retry")
            return [PartitionAnswer(p.topic_partition, ErrorCode.REQUEST_TIMED_OUT, message)
                    for p in request.partitions]
        try:
            return self._produce(request)
        finally:
            self._wait_slots.give_back()

    def _produce(self, request: ProduceRequest) -> list[PartitionAnswer]:
        started, answers, waits = self._append(request)
        results: Sequence[ProduceResult] = ()
        if waits:
            results = self._delayed.wait([w for _, w in waits], self._timeout_ms(request))
        return self._respond(request, started, answers, waits, results)

    def produce_async(self, request: ProduceRequest,
                      answer: Callable[[Callable[[], list[PartitionAnswer]]], None]) -> int | None:
        """Produce without blocking (ProduceStream): append now, then call `answer(build)` once the
        request is answered, where `build()` makes the answers. For acks=-1 that is from the thread
        that moved the HW (or expired the wait), so the costly part is left to `build`, which the
        stream calls on its own thread. Returns the deadline (monotonic ms) of the wait parked for
        the HW, past which someone must call `expire_due()`; None if `answer` was called already."""
        started, answers, waits = self._append(request)
        if not waits:
            answer(lambda: self._respond(request, started, answers, waits, ()))
            return None
        return self._delayed.park(
            [w for _, w in waits], self._timeout_ms(request),
            lambda results: answer(lambda: self._respond(request, started, answers, waits, results)))

    def expire_due(self) -> None:
        """Answer the parked acks=-1 requests whose timeout has passed (see `produce_async`)."""
        self._delayed.expire_due()

    def _timeout_ms(self, request: ProduceRequest) -> int:
        timeout_ms = request.timeout_ms if request.timeout_ms > 0 else self._request_timeout_ms
        return min(timeout_ms, PRODUCE_TIMEOUT_MS_MAX)

    def _append(self, request: ProduceRequest):
        """Steps 1-3: the answers known now (by index in the request) and the acks=-1 waits."""
        started = time.perf_counter()
        acks = request.acks
        self._metrics.produce_acks(acks).requests.inc()
        answers: dict[int, PartitionAnswer] = {}
        waits: list[tuple[int, ProduceWait]] = []
        seen: set[TopicPartition] = set()
        deferred: list[tuple[HostedPartition, Effects]] = []
        with self._turn:  # turn.py: a system call per partition, so one request's appends at a time
            for index, data in enumerate(request.partitions):
                tp = data.topic_partition
                if acks not in VALID_ACKS:
                    answers[index] = PartitionAnswer(tp, ErrorCode.INVALID_REQUIRED_ACKS,
                                                     f"acks must be 0, 1 or -1, not {acks}")
                elif is_internal(tp.topic) and not request.internal:
                    answers[index] = PartitionAnswer(tp, ErrorCode.INVALID_TOPIC, (
                        f"{tp.topic} is an internal topic: only the brokers write to it (commit offsets "
                        "through the group API instead)"))
                elif tp in seen:
                    answers[index] = PartitionAnswer(tp, ErrorCode.INVALID_REQUEST,
                                                     f"{tp} appears twice in the request")
                else:
                    seen.add(tp)
                    answer, wait = self._produce_one(tp, data, acks, deferred)
                    if wait is None:
                        answers[index] = answer
                    else:
                        waits.append((index, wait))
            for hosted, effects in deferred:  # followers and consumers hear once the whole request is in the logs
                hosted.act_on(effects)
        return started, answers, waits

    def _respond(self, request: ProduceRequest, started: float, answers: dict[int, PartitionAnswer],
                 waits: list[tuple[int, ProduceWait]], results: Sequence[ProduceResult]) -> list[PartitionAnswer]:
        """Step 4's answer, from the answers known at append time and the waits' results."""
        acks = request.acks
        if waits:
            for (index, wait), result in zip(waits, results):
                answers[index] = PartitionAnswer(
                    wait.topic_partition, result.error_code,
                    "" if result.error_code is ErrorCode.NONE else _WAIT_MESSAGES.get(result.error_code, ""),
                    result.base_offset, 0, result.leader_epoch,
                )
        ordered = [answers[i] for i in range(len(request.partitions))]
        for answer in ordered:
            if answer.error_code != ErrorCode.NONE:
                self._metrics.produce_errors.labels(ErrorCode(answer.error_code).name).inc()
        self._metrics.produce_acks(acks).duration_s.observe(time.perf_counter() - started)
        if acks == ACKS_NONE:
            return []
        return ordered

    def _produce_one(self, tp: TopicPartition, data: PartitionProduce, acks: int,
                     deferred: list[tuple[HostedPartition, Effects]]):
        hosted = self._lookup(tp)
        if hosted is None:
            known = self._is_known(tp.topic, tp.partition)
            code = ErrorCode.NOT_LEADER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return PartitionAnswer(tp, code, f"{tp} is not hosted by this broker"), None
        topic_bytes_max = self._topic_configs.log_config(tp.topic).max_batch_bytes
        checked = self._checked_batch(data, topic_bytes_max)
        if isinstance(checked[0], ErrorCode):
            return PartitionAnswer(tp, *checked), None
        batch, header = checked
        codec = self._topic_configs.compression(tp.topic)
        if codec is not None:
            checked = self._recompressed(batch, header, codec, topic_bytes_max)
            if isinstance(checked[0], ErrorCode):
                return PartitionAnswer(tp, *checked), None
            batch, header = checked
        if self._topic_configs.log_append_time(tp.topic):
            batch, header = with_log_append_time(batch, header, self._clock.now_ms())
        min_insync_replicas = self._topic_configs.min_insync_replicas(tp.topic)
        appended = append_produced(
            hosted, acks=acks, min_insync_replicas=min_insync_replicas, batch=batch, header=header,
            fsync=self._topic_configs.fsync_each_append(tp.topic), now_ms=self._clock.monotonic_ms(), deferred=deferred,
        )
        if appended.error_code is not ErrorCode.NONE:
            return PartitionAnswer(tp, appended.error_code, appended.message), None
        if not appended.duplicate:
            self._metrics.bytes_in.inc(len(batch))
        if acks == ACKS_ALL:
            return None, ProduceWait(tp, appended.leader_epoch, appended.base_offset, appended.last_offset,
                                     min_insync_replicas)
        return PartitionAnswer(tp, ErrorCode.NONE, "", appended.base_offset, appended.log_start_offset,
                               appended.leader_epoch), None

    def _checked_batch(self, data: PartitionProduce,
                       topic_bytes_max: int) -> tuple[bytes, BatchHeader] | tuple[ErrorCode, str]:
        """The batch and its header, checked against the topic's max.message.bytes (`topic_bytes_max`) and
        the broker's limit, or the error code and message to answer."""
        batch = data.record_batch
        if batch and data.records:
            return ErrorCode.INVALID_REQUEST, "send either record_batch or records, not both"
        try:
            if data.records:
                batch = encode_batch(data.records)
            elif not batch:
                return ErrorCode.INVALID_REQUEST, "no records"
            if len(batch) > self._batch_bytes_max:
                return ErrorCode.RECORD_TOO_LARGE, (f"batch of {len(batch)} bytes, the broker's limit "
                                                    f"(message_max_bytes) is {self._batch_bytes_max}")
            if len(batch) > topic_bytes_max:
                return ErrorCode.RECORD_TOO_LARGE, (f"batch of {len(batch)} bytes, the topic's limit "
                                                    f"(max.message.bytes) is {topic_bytes_max}")
            header = validate_batch(batch, max_bytes=topic_bytes_max)
        except RecordTooLargeError as exc:
            return ErrorCode.RECORD_TOO_LARGE, str(exc)
        except UnsupportedCompressionError as exc:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, str(exc)
        except CorruptRecordError as exc:
            return ErrorCode.CORRUPT_RECORD, str(exc)
        except (TypeError, ValueError) as exc:  # headers of records sent decoded (encode_headers)
            return ErrorCode.INVALID_REQUEST, f"bad record headers: {exc}"
        if header.size_bytes != len(batch):
            return ErrorCode.CORRUPT_RECORD, f"{len(batch) - header.size_bytes} bytes follow the batch; send one batch"
        if header.record_count == 0:
            return ErrorCode.CORRUPT_RECORD, "an empty batch: only the log cleaner writes one"
        if header.attributes & ATTRIBUTE_LOG_APPEND_TIME:
            return ErrorCode.CORRUPT_RECORD, ("the batch claims a LogAppendTime stamp; only the leader stamps one, "
                                              "for a topic with message.timestamp.type=LogAppendTime")
        return batch, header

    def _recompressed(self, batch: bytes, header: BatchHeader, codec: int,
                      topic_bytes_max: int) -> tuple[bytes, BatchHeader] | tuple[ErrorCode, str]:
        """The validated batch with the topic's codec (compression.type), still within the size limits."""
        try:
            batch, header = recompressed(batch, header, codec)
        except (CorruptRecordError, RecordTooLargeError) as exc:  # validated already: only the limits can fail
            return ErrorCode.RECORD_TOO_LARGE, f"the batch in the topic's compression.type: {exc}"
        limit = min(self._batch_bytes_max, topic_bytes_max)
        if header.size_bytes > limit:
            return ErrorCode.RECORD_TOO_LARGE, (f"in the topic's compression.type the batch takes {header.size_bytes} "
                                                f"bytes, over the limit of {limit}")
        return batch, header


_WAIT_MESSAGES = {
    ErrorCode.REQUEST_TIMED_OUT: "the ISR did not replicate the batch within the timeout",
    ErrorCode.NOT_LEADER: "leadership moved before the batch was committed",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ("the ISR fell below min.insync.replicas after the append: the "
                                                 "batch is on fewer replicas than asked (retry it)"),
}

