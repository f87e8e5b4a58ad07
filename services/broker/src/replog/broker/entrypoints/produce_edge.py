"""Produce at the edge: a protobuf request becomes domain values once, and the answers protobuf once.

The produce path (produce/produce_handler.py) sees no protobuf. `ProduceEdge` is what
LogService.Produce and a ProduceStream (produce_stream.py) call: it converts each
partition of a request, and each answer, once per request. Records a client sends
decoded instead of as a batch are read once here, with a missing timestamp set to
the broker's clock, and the handler encodes them into the batch it appends.
"""

from __future__ import annotations

from typing import Callable

from replog.broker.produce.produce_handler import ProduceHandler
from replog.broker.produce.values import PartitionAnswer, PartitionProduce, ProduceRequest
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition
from replog.v1 import log_pb2


class ProduceEdge:
    def __init__(self, handler: ProduceHandler, clock: Clock) -> None:
        self._handler = handler
        self._clock = clock

    def produce(self, request: log_pb2.ProduceRequest) -> log_pb2.ProduceResponse:
        return produce_response(self._handler.produce(produce_request(request, self._clock)))

    def produce_async(self, request: log_pb2.ProduceRequest,
                      answer: Callable[[Callable[[], log_pb2.ProduceResponse]], None]) -> int | None:
        """ProduceHandler.produce_async, with `build()` making the protobuf response on the caller's thread."""
        return self._handler.produce_async(produce_request(request, self._clock),
                                           lambda build: answer(lambda: produce_response(build())))

    def expire_due(self) -> None:
        self._handler.expire_due()


def produce_request(request: log_pb2.ProduceRequest, clock: Clock) -> ProduceRequest:
    now_ms = None
    partitions = []
    for data in request.partitions:
        records = ()
        if len(data.records):
            if now_ms is None:
                now_ms = clock.now_ms()
            records = tuple((None if r.key_is_null else r.key, r.value, r.timestamp_ms or now_ms, _headers(r))
                            for r in data.records)
        # record_batch is read once: each read of a bytes field copies it
        partitions.append(PartitionProduce(TopicPartition(data.topic, data.partition), data.record_batch, records))
    return ProduceRequest(request.acks, request.timeout_ms, tuple(partitions))


def _headers(record) -> tuple[tuple[str, bytes | None], ...] | None:
    if not len(record.headers):
        return None
    return tuple((h.key, None if h.value_is_null else h.value) for h in record.headers)


def produce_response(answers: list[PartitionAnswer]) -> log_pb2.ProduceResponse:
    return log_pb2.ProduceResponse(partitions=[
        log_pb2.ProducePartitionResponse(
            topic=a.topic_partition.topic, partition=a.topic_partition.partition, error_code=a.error_code,
            error_message=a.error_message, base_offset=a.base_offset, log_start_offset=a.log_start_offset,
            leader_epoch=a.leader_epoch)
        for a in answers])
