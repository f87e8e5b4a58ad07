"""One ProduceStream on the leader: requests appended in the order sent, answered as each completes.

Theory of operation (log.proto, LogService.ProduceStream; DESIGN.md §4 "Produce"):

A unary Produce holds a gRPC handler thread until its acks=-1 wait ends, and a
producer that wants its batches appended in sequence order can then have only
one request per partition in flight: each batch waits for the whole round trip
of the one before it (append, the followers' fetch, the HW, the answer). On a
stream the producer keeps several in flight, as Kafka's producer does over one
connection, and the broker still appends them in the order sent.

Two threads serve a stream:
- the *reader* takes the requests one at a time, in order, and appends each
  (`ProduceHandler.produce_async`); an acks=-1 request is parked in the delayed
  produces with a callback and the reader goes on to the next request at once;
- the gRPC handler thread (this generator) sends the answers as they come:
  every answer goes through one queue, and the response proto is built here,
  not on the replication thread whose fetch moved the HW. It also keeps the
  clock for its parked requests: past the earliest deadline it expires the
  waits that are due (nothing else watches time for callback waits).

The stream ends when the producer half-closes it and every request is
answered; at once when it is cancelled or fails (answers still parked are
dropped: the producer treats them as lost in transit and resends, which the
idempotent producer state answers as duplicates); and when the broker stops
(the servicer cancels its open streams, and the delayed produces expire every
wait, so nothing is left parked).
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
from typing import Callable, Iterable, Iterator

from replog.broker.adapters.produce_handler import ProduceHandler
from replog.broker.core.errors import ErrorCode
from replog.common import hopmarks
from replog.common.clock import Clock
from replog.v1 import log_pb2

log = logging.getLogger(__name__)

_ACCEPTED, _ANSWER, _DEADLINE, _END = "accepted", "answer", "deadline", "end"


def serve_produce_stream(handler: ProduceHandler, requests: Iterable[log_pb2.ProduceStreamRequest], clock: Clock,
                         stopping: Callable[[], bool]) -> Iterator[log_pb2.ProduceStreamResponse]:
    events: queue.SimpleQueue = queue.SimpleQueue()
    reader = threading.Thread(target=_read, args=(handler, requests, events.put, stopping),
                              name="produce-stream", daemon=True)
    reader.start()
    deadlines: list[int] = []  # heap of the parked waits' deadlines (monotonic ms); lazily passed
    unanswered = 0  # requests read and not answered yet (each is marked before its answer can be queued)
    reading = True
    while reading or unanswered > 0:
        timeout_s = None
        if deadlines:
            timeout_s = max(0.0, (deadlines[0] - clock.monotonic_ms()) / 1000)
        try:
            kind, item = events.get(timeout=timeout_s)
        except queue.Empty:
            handler.expire_due()
            now_ms = clock.monotonic_ms()
            while deadlines and deadlines[0] <= now_ms:
                heapq.heappop(deadlines)
            continue
        if kind == _ACCEPTED:
            unanswered += 1
        elif kind == _ANSWER:
            unanswered -= 1
            answer = item() if callable(item) else item
            hopmarks.mark("L5")
            yield answer
        elif kind == _DEADLINE:
            heapq.heappush(deadlines, item)
        else:  # _END, with whether the stream broke
            if item:  # cancelled or failed: no one is left to read the answers
                return
            reading = False  # half-closed by the producer: answer what is still parked, then end


def _read(handler: ProduceHandler, requests: Iterable[log_pb2.ProduceStreamRequest], put,
          stopping: Callable[[], bool]) -> None:
    broken = False
    try:
        for message in requests:
            hopmarks.mark("L1")
            if stopping():
                broken = True
                break
            request_id = message.request_id
            put((_ACCEPTED, None))
            if not message.HasField("produce"):
                put((_ANSWER, log_pb2.ProduceStreamResponse(
                    request_id=request_id, error_code=ErrorCode.INVALID_REQUEST,
                    error_message="a ProduceStream request carries a produce request; nothing was appended")))
                continue
            deadline_ms = handler.produce_async(message.produce, lambda build, rid=request_id: put(
                (_ANSWER, lambda: log_pb2.ProduceStreamResponse(request_id=rid, produce=build()))))
            hopmarks.mark("L2")
            if deadline_ms is not None:
                put((_DEADLINE, deadline_ms))
    except Exception as exc:  # noqa: BLE001 - the stream was cancelled or failed; the generator ends it
        log.debug("produce stream ended: %s", exc)
        broken = True
    finally:
        put((_END, broken))
