"""gRPC LogService: the clients' API (Produce, Fetch, ListOffsets, OffsetsForLeaderEpochs, Metadata,
InitProducerId, DescribeReplicas, AdvanceLogStartOffset).

Thin: input checks and protobuf conversion here (produce_edge.py for Produce),
decisions in the core (via replicas/leader_side.py and produce/produce_handler.py).
Fetch reads committed records only (below the HW), whole batches as stored,
long-polling on the partitions' wake-up events; with `decode_records` the
records at or after the fetch offset are also returned decoded. Metadata is
answered from the controller's UpdateMetadata.

Who may call each method, and the ACLs a user needs for it (produce for Produce and
ProduceStream, consume for Fetch, describe for ListOffsets, OffsetsForLeaderEpochs, Metadata
and DescribeReplicas, delete for AdvanceLogStartOffset), are checked before a handler runs, by the method table
(replog.common.security.rules); so are the bounds on every field (replog.common.edge), and
answers listing every topic or replica are trimmed there to what the user may describe.
AdvanceLogStartOffset checkpoints the log starts before it answers, so deleted records stay
deleted after a crash.

Client quotas (broker/quotas/edge.py) come after authorization: a produce or fetch of a user over its
quota is answered with a throttle time, and one arriving while its user is throttled is turned away.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import grpc
from kazoo.exceptions import KazooException

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.entrypoints.produce_edge import ProduceEdge
from replog.broker.entrypoints.produce_stream import serve_produce_stream
from replog.broker.produce.producer_ids import PRODUCER_EPOCH_MAX, ProducerIdAllocator, ProducerIdsUnavailable
from replog.broker.quotas.edge import QuotaGate
from replog.broker.replicas.describe import ReplicaDescription, describe
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import (
    ConsumerFetchAnswer,
    list_offset,
    offset_for_leader_epoch,
    read_for_consumer,
)
from replog.broker.maintenance.log_maintenance import delete_records
from replog.broker.replicas.long_poll import long_poll
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.wait_slots import WaitSlots
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition
from replog.common.grpc_server import OpenStreams
from replog.common.records import CorruptRecordError, TimestampType, decode_records
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc

log = logging.getLogger(__name__)

FETCH_WAIT_MS_MAX = 30_000
_TIMESTAMP_TYPES = {TimestampType.CREATE_TIME: common_pb2.TIMESTAMP_TYPE_CREATE_TIME,
                    TimestampType.LOG_APPEND_TIME: common_pb2.TIMESTAMP_TYPE_LOG_APPEND_TIME}
_SPECS = {log_pb2.OFFSET_SPEC_EARLIEST: "earliest", log_pb2.OFFSET_SPEC_LATEST: "latest",
          log_pb2.OFFSET_SPEC_TIMESTAMP: "timestamp"}


class LogServicer(log_pb2_grpc.LogServiceServicer):
    def __init__(
        self,
        *,
        broker_id: int,
        produce: ProduceEdge,
        lookup: Callable[[TopicPartition], HostedPartition | None],
        hosted: Callable[[], list[HostedPartition]],
        metadata: MetadataCache,
        producer_ids: ProducerIdAllocator,
        clock: Clock,
        metrics: BrokerMetrics,
        fetch_bytes_max: int,
        stopping: Callable[[], bool],
        wait_slots: WaitSlots,
        quotas: QuotaGate,
        topic_config_defaults: dict[str, str] | None = None,
        checkpoint: Callable[[], None] = lambda: None,
    ) -> None:
        self._topic_config_defaults = dict(topic_config_defaults or {})
        self._checkpoint = checkpoint
        self._wait_slots = wait_slots
        self._quotas = quotas
        self._broker_id = broker_id
        self._produce = produce
        self._lookup = lookup
        self._hosted = hosted
        self._metadata = metadata
        self._producer_ids = producer_ids
        self._clock = clock
        self._metrics = metrics
        self._fetch_bytes_max = fetch_bytes_max
        self._stopping = stopping
        self._streams = OpenStreams()  # the open ProduceStreams

    def Produce(self, request, context):
        return self._quotas.produce_edge(context, self._produce).produce(request)

    def ProduceStream(self, request_iterator, context):
        """Produce over a stream (produce_stream.py). The stream holds a handler thread for its life,
        so it takes a wait slot (wait_slots.py) and is refused with RESOURCE_EXHAUSTED without one; the
        caller was authorized to open it, and admitted within its identity's limits, before."""
        if not self._wait_slots.try_take():
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"this broker already holds {self._wait_slots.capacity} waiting requests and streams; "
                          "retry, or use Produce")
        try:
            self._streams.track(context)
            yield from serve_produce_stream(self._quotas.stream_edge(context, self._produce), request_iterator,
                                            self._clock, lambda: self._stopping() or not context.is_active())
        finally:
            self._wait_slots.give_back()

    def end_streams(self) -> None:
        """Cancel every open produce stream (the broker is stopping)."""
        self._streams.cancel_all()

    # --- Fetch --------------------------------------------------------------------------

    def Fetch(self, request, context):
        quota = self._quotas.fetch(context)  # None: no fetch quota applies to the caller
        if quota is not None and (throttled := quota.throttled()) is not None:
            return throttled
        started = time.perf_counter()
        topic_partitions = [TopicPartition(p.topic, p.partition) for p in request.partitions]
        hosted = {tp: self._lookup(tp) for tp in topic_partitions}
        bytes_max = min(request.max_bytes or self._fetch_bytes_max, self._fetch_bytes_max)
        if quota is not None:
            bytes_max = quota.bytes_max(bytes_max)

        may_wait = request.max_wait_ms > 0 and self._wait_slots.try_take()  # else answer what there is now
        try:
            answers = long_poll(
                lambda i, bytes_left: self._read_one(request.partitions[i], hosted[topic_partitions[i]],
                                                     topic_partitions[i], bytes_left),
                [hosted[tp] for tp in topic_partitions], bytes_max=bytes_max, size=lambda a: len(a.records),
                urgent=lambda a: a.error_code is not ErrorCode.NONE, min_bytes=request.min_bytes,
                max_wait_ms=min(request.max_wait_ms, FETCH_WAIT_MS_MAX) if may_wait else 0, clock=self._clock,
                stopping=self._stopping,
            )
        finally:
            if may_wait:
                self._wait_slots.give_back()
        # Filled in place: partition answers built apart and then listed would be copied, records and all.
        response = log_pb2.FetchResponse()
        add_partition = response.partitions.add
        for tp, partition, answer in zip(topic_partitions, request.partitions, answers):
            self._add_partition_data(add_partition, tp, partition.fetch_offset, answer, request.decode_records)
        sent = sum(len(a.records) for a in answers)
        if quota is not None:
            response.throttle_time_ms = quota.record(sent)
        metrics = self._metrics.consumer_fetch
        metrics.requests.inc()
        metrics.count_errors(p.error_code for p in response.partitions)
        metrics.bytes_out.inc(sent)
        metrics.duration_s.observe(time.perf_counter() - started)
        return response

    def _read_one(self, partition, hosted: HostedPartition | None, tp: TopicPartition,
                  bytes_max: int) -> ConsumerFetchAnswer:
        if hosted is None:
            return ConsumerFetchAnswer(self._not_here(tp), f"{tp} is not hosted by this broker")
        if partition.fetch_offset < 0:
            return ConsumerFetchAnswer(ErrorCode.OFFSET_OUT_OF_RANGE, f"negative fetch offset {partition.fetch_offset}")
        wanted = min(partition.partition_max_bytes or bytes_max, bytes_max)
        return read_for_consumer(hosted, current_leader_epoch=partition.current_leader_epoch,
                                 fetch_offset=partition.fetch_offset, bytes_max=wanted)

    @staticmethod
    def _add_partition_data(add_partition, tp: TopicPartition, fetch_offset: int, answer: ConsumerFetchAnswer,
                            decode: bool) -> None:
        """One partition's answer, added in place (`add_partition`: the response's `partitions.add`)."""
        data = add_partition(
            topic=tp.topic, partition=tp.partition, error_code=answer.error_code, error_message=answer.message,
            high_watermark=answer.high_watermark, log_start_offset=answer.log_start_offset, records=answer.records,
        )
        if decode and answer.records:
            try:
                decoded = decode_records(answer.records, fetch_offset)
            except CorruptRecordError as exc:
                data.error_code, data.error_message = ErrorCode.CORRUPT_RECORD, str(exc)
                return
            data.decoded_records.extend(
                common_pb2.Record(offset=r.offset, key=r.key or b"", key_is_null=r.key is None, value=r.value,
                                  timestamp_ms=r.timestamp_ms, timestamp_type=_TIMESTAMP_TYPES[r.timestamp_type],
                                  headers=[common_pb2.RecordHeader(key=k, value=v or b"", value_is_null=v is None)
                                           for k, v in r.headers])
                for r in decoded if r.offset < answer.high_watermark
            )

    def _not_here(self, tp: TopicPartition) -> ErrorCode:
        known = tp.partition >= 0 and self._metadata.has_partition(tp.topic, tp.partition)
        return ErrorCode.NOT_LEADER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    # --- ListOffsets, Metadata ------------------------------------------------------------

    def ListOffsets(self, request, context):
        results = []
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            hosted = self._lookup(tp)
            spec = _SPECS.get(item.spec)
            if spec is None:
                results.append(log_pb2.ListOffsetsResult(topic=tp.topic, partition=tp.partition, offset=-1,
                                                         timestamp_ms=-1, error_code=ErrorCode.INVALID_REQUEST))
                continue
            if hosted is None:
                results.append(log_pb2.ListOffsetsResult(topic=tp.topic, partition=tp.partition, offset=-1,
                                                         timestamp_ms=-1, error_code=self._not_here(tp)))
                continue
            found = list_offset(hosted, spec=spec, timestamp_ms=item.timestamp_ms,
                                current_leader_epoch=item.current_leader_epoch)
            results.append(log_pb2.ListOffsetsResult(
                topic=tp.topic, partition=tp.partition, error_code=found.error_code, offset=found.offset,
                timestamp_ms=found.timestamp_ms, leader_epoch=found.leader_epoch))
        return log_pb2.ListOffsetsResponse(partitions=results)

    def OffsetsForLeaderEpochs(self, request, context):
        """Where each asked epoch ends in this leader's log (KIP-320's consumer half; the followers' own
        question goes through ReplicationService.OffsetForLeaderEpoch and the same core answer)."""
        response = log_pb2.OffsetsForLeaderEpochsResponse()
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            hosted = self._lookup(tp)
            found = (Refusal(self._not_here(tp), f"{tp} is not hosted by this broker") if hosted is None
                     else offset_for_leader_epoch(hosted, current_leader_epoch=item.current_leader_epoch,
                                                  requested_leader_epoch=item.leader_epoch))
            if isinstance(found, Refusal):
                response.partitions.add(topic=tp.topic, partition=tp.partition, error_code=found.code,
                                        error_message=found.reason, leader_epoch=-1, end_offset=-1)
            else:
                response.partitions.add(topic=tp.topic, partition=tp.partition, error_code=ErrorCode.NONE,
                                        leader_epoch=found.leader_epoch, end_offset=found.end_offset)
        return response

    def Metadata(self, request, context):
        return self._metadata.metadata_response(list(request.topics))

    # --- InitProducerId -------------------------------------------------------------------

    def InitProducerId(self, request, context):
        try:
            if request.producer_id >= 0 and 0 <= request.producer_epoch < PRODUCER_EPOCH_MAX:
                # Re-initialising an instance: the same id with a higher epoch fences the old one.
                return log_pb2.InitProducerIdResponse(producer_id=request.producer_id,
                                                      producer_epoch=request.producer_epoch + 1)
            return log_pb2.InitProducerIdResponse(producer_id=self._producer_ids.next_producer_id(), producer_epoch=0)
        except (ProducerIdsUnavailable, KazooException) as exc:
            log.warning("InitProducerId: %s", exc)
            return log_pb2.InitProducerIdResponse(error_code=ErrorCode.METADATA_STORE_UNAVAILABLE,
                                                  error_message=f"cannot allocate a producer id: {exc}")

    # --- DescribeReplicas -----------------------------------------------------------------

    def DescribeReplicas(self, request, context):
        wanted = {TopicPartition(p.topic, p.partition) for p in request.partitions}
        now_ms = self._clock.monotonic_ms()
        described = []
        for hosted in self._hosted():
            if wanted and hosted.topic_partition not in wanted:
                continue
            found = describe(hosted, now_ms)
            if found is not None:
                described.append(_description(found))
        described.sort(key=lambda d: (d.topic, d.partition))
        return log_pb2.DescribeReplicasResponse(broker_id=self._broker_id, replicas=described,
                                                topic_config_defaults=self._topic_config_defaults)

    # --- AdvanceLogStartOffset (DeleteRecords) ---------------------------------------------------

    def AdvanceLogStartOffset(self, request, context):
        results, moved = [], False
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            hosted = self._lookup(tp)
            if hosted is None:
                results.append(log_pb2.LogStartOffsetResult(
                    topic=tp.topic, partition=tp.partition, error_code=self._not_here(tp),
                    error_message=f"{tp} is not hosted by this broker", log_start_offset=-1))
                continue
            outcome = delete_records(hosted, item.offset)
            if isinstance(outcome, Refusal):
                results.append(log_pb2.LogStartOffsetResult(
                    topic=tp.topic, partition=tp.partition, error_code=outcome.code, error_message=outcome.reason,
                    log_start_offset=-1))
                continue
            moved = True
            log.info("DeleteRecords: %s now starts at offset %d", tp, outcome)
            results.append(log_pb2.LogStartOffsetResult(topic=tp.topic, partition=tp.partition,
                                                         log_start_offset=outcome))
        if moved:
            try:
                self._checkpoint()
            except OSError as exc:
                context.abort(grpc.StatusCode.INTERNAL, f"log starts moved but could not be checkpointed: {exc}")
        return log_pb2.AdvanceLogStartOffsetResponse(partitions=results)


def _description(found: ReplicaDescription) -> log_pb2.ReplicaDescription:
    return log_pb2.ReplicaDescription(
        topic=found.topic, partition=found.partition, leader=found.leader, leader_epoch=found.leader_epoch,
        log_start_offset=found.log_start_offset, log_end_offset=found.log_end_offset,
        high_watermark=found.high_watermark, size_bytes=found.size_bytes, isr=found.isr,
        followers=[log_pb2.FollowerLag(broker_id=f.broker_id, log_end_offset=f.log_end_offset,
                                       bytes_behind=f.bytes_behind, caught_up_ms_ago=f.caught_up_ms_ago)
                   for f in found.followers],
    )
