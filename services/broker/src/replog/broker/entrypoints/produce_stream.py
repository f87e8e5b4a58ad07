"""One ProduceStream on the leader: requests appended in the order sent, answered as each completes.

Theory of operation (log.proto, LogService.ProduceStream; docs/architecture.md, "Produce"):

A unary Produce holds a gRPC handler thread until its acks=-1 wait ends, and a
producer that wants its batches appended in sequence order can then have only
one request per partition in flight: each batch waits for the whole round trip
of the one before it (append, the followers' fetch, the HW, the answer). On a
stream the producer keeps several in flight, as Kafka's producer does over one
connection, and the broker still appends them in the order sent.

Two threads serve a stream:
- the *reader* takes the requests one at a time, in order, and appends each
  (`ProduceEdge.produce_async`); an acks=-1 request is parked in the delayed
  produces with a callback and the reader goes on to the next request at once;
- the gRPC handler thread (this generator) sends the answers as they come:
  every answer goes through one queue, and the response proto is built here,
  not on the replication thread whose fetch moved the HW. It also keeps the
  clock for its parked requests: past the earliest deadline it expires the
  waits that are due (nothing else watches time for callback waits).

Only answers, the stream's end and a deadline earlier than the one the sender
sleeps towards wake the sender. What the reader only books (one more request
to answer, a parked request's deadline) goes into `_Book` under its lock, so
bookkeeping puts no thread switch into the middle of an append, on the produce
path's critical hop (docs/perf/produce-stream.md). The sender
sleeps towards its earliest parked deadline, or at most IDLE_MS when none is
parked, so a request parked with the usual long timeout wakes nobody; one with
a deadline before that does. An answered request leaves the unanswered set,
and its deadline is dropped when it reaches the top of the heap, so a deadline
wakes the sender only while its request is still waiting.

The stream ends when the producer half-closes it and every request is
answered; at once when it is cancelled or fails (answers still parked are
dropped: the producer treats them as lost in transit and resends, which the
idempotent producer state answers as duplicates); and when the broker stops
(the servicer cancels its open streams, and the delayed produces expire every
wait, so nothing is left parked).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
from typing import Callable, Iterable, Iterator

from replog.broker.core.errors import ErrorCode
from replog.broker.entrypoints.produce_edge import ProduceEdge
from replog.common import hopmarks
from replog.common.hopmarks import Hop
from replog.common.clock import Clock
from replog.v1 import log_pb2

log = logging.getLogger(__name__)

_ANSWER, _WAKE, _END = "answer", "wake", "end"

# The sender's longest sleep with no request parked: a request parked with a deadline before it wakes
# the sender; one with a later deadline (the usual 30 s) does not, and is seen at the next look.
IDLE_MS = 1_000


class _Book:
    """What the reader tells the sender without waking it; guarded by `lock`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.unanswered: set[int] = set()  # seqs of the requests read and not answered yet (each added before
        # its answer can be queued)
        self.deadlines: list[tuple[int, int]] = []  # heap of (deadline monotonic ms, request seq)
        self.wake_at_ms = 0  # when the sender wakes at the latest; an earlier deadline must wake it


def serve_produce_stream(handler: ProduceEdge, requests: Iterable[log_pb2.ProduceStreamRequest], clock: Clock,
                         stopping: Callable[[], bool]) -> Iterator[log_pb2.ProduceStreamResponse]:
    events: queue.SimpleQueue = queue.SimpleQueue()
    book = _Book()
    reader = threading.Thread(target=_read, args=(handler, requests, events.put, book, stopping),
                              name="produce-stream", daemon=True)
    reader.start()
    reading = True
    while True:
        with book.lock:
            if not reading and not book.unanswered:
                return
            now_ms = clock.monotonic_ms()
            deadlines = book.deadlines
            while deadlines and deadlines[0][1] not in book.unanswered:
                heapq.heappop(deadlines)  # answered: its deadline wakes nobody
            parked_due = bool(deadlines)
            due_ms = deadlines[0][0] if parked_due else now_ms + IDLE_MS
            book.wake_at_ms = due_ms
        try:
            kind, item = events.get(timeout=max(0.0, (due_ms - now_ms) / 1000))
        except queue.Empty:
            if parked_due and due_ms <= clock.monotonic_ms():
                handler.expire_due()  # answers the expired waits through their callbacks (queued above)
                with book.lock:
                    while book.deadlines and book.deadlines[0][0] <= due_ms:
                        heapq.heappop(book.deadlines)
            continue
        if kind == _ANSWER:
            seq, answer = item
            with book.lock:
                book.unanswered.discard(seq)
            answer = answer() if callable(answer) else answer
            hopmarks.mark(Hop.LEADER_ANSWERS_PRODUCER)
            yield answer
        elif kind == _END:  # with whether the stream broke
            if item:  # cancelled or failed: no one is left to read the answers
                return
            reading = False  # half-closed by the producer: answer what is still parked, then end
        # _WAKE: a deadline earlier than the sender's; the loop looks again


def _read(handler: ProduceEdge, requests: Iterable[log_pb2.ProduceStreamRequest], put, book: _Book,
          stopping: Callable[[], bool]) -> None:
    broken = False
    seqs = itertools.count()
    try:
        for message in requests:
            hopmarks.mark(Hop.LEADER_HAS_REQUEST)
            if stopping():
                broken = True
                break
            request_id = message.request_id
            seq = next(seqs)  # ours, not the producer's request id, which a client may repeat
            with book.lock:
                book.unanswered.add(seq)
            if not message.HasField("produce"):
                put((_ANSWER, (seq, log_pb2.ProduceStreamResponse(
                    request_id=request_id, error_code=ErrorCode.INVALID_REQUEST,
                    error_message="a ProduceStream request carries a produce request; nothing was appended"))))
                continue
            deadline_ms = handler.produce_async(message.produce, lambda build, rid=request_id, seq=seq: put(
                (_ANSWER, (seq, lambda: log_pb2.ProduceStreamResponse(request_id=rid, produce=build())))))
            hopmarks.mark(Hop.LEADER_APPENDED)
            if deadline_ms is None:
                continue  # answered already
            with book.lock:
                waiting = seq in book.unanswered  # else its answer was taken already
                if waiting:
                    heapq.heappush(book.deadlines, (deadline_ms, seq))
                wake = waiting and deadline_ms < book.wake_at_ms
            if wake:
                put((_WAKE, None))
    except Exception as exc:  # noqa: BLE001 - the stream was cancelled or failed; the generator ends it
        log.debug("produce stream ended: %s", exc)
        broken = True
    finally:
        put((_END, broken))
