"""The ProduceStream's two threads: answers go out as requests complete, a parked request expires at
its own deadline whether or not the sender was asleep, and a half-closed stream ends only once every
request it read is answered. A fake handler stands in for the logs (no I/O); the threads are real."""

from __future__ import annotations

import queue
import threading
import time

from replog.broker.core.errors import ErrorCode
from replog.broker.entrypoints import produce_stream
from replog.broker.entrypoints.produce_stream import serve_produce_stream
from replog.common.clock import SystemClock
from replog.v1 import log_pb2

CLOCK = SystemClock()


class FakeHandler:
    """acks=1 is answered at once; acks=-1 is parked until `complete_all` or its deadline (`expire_due`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parked: list[tuple[int, object]] = []
        self.expired = 0

    def produce_async(self, request: log_pb2.ProduceRequest, answer) -> int | None:
        if request.acks != -1:
            answer(lambda: log_pb2.ProduceResponse(partitions=[log_pb2.ProducePartitionResponse(base_offset=0)]))
            return None
        deadline_ms = CLOCK.monotonic_ms() + request.timeout_ms
        with self._lock:
            self._parked.append((deadline_ms, answer))
        return deadline_ms

    def expire_due(self) -> None:
        now_ms = CLOCK.monotonic_ms()
        with self._lock:
            due = [p for p in self._parked if p[0] <= now_ms]
            self._parked = [p for p in self._parked if p[0] > now_ms]
        for _, answer in due:
            self.expired += 1
            answer(lambda: log_pb2.ProduceResponse(partitions=[log_pb2.ProducePartitionResponse(
                error_code=ErrorCode.REQUEST_TIMED_OUT, base_offset=-1)]))

    def complete_all(self) -> None:
        with self._lock:
            parked, self._parked = self._parked, []
        for _, answer in parked:
            answer(lambda: log_pb2.ProduceResponse(partitions=[log_pb2.ProducePartitionResponse(base_offset=7)]))


def message(request_id: int, *, acks: int = -1, timeout_ms: int = 30_000) -> log_pb2.ProduceStreamRequest:
    return log_pb2.ProduceStreamRequest(request_id=request_id, produce=log_pb2.ProduceRequest(
        acks=acks, timeout_ms=timeout_ms, partitions=[log_pb2.ProducePartitionData(topic="t", partition=0)]))


class Stream:
    """A stream being served: `send` a request, `close` half-closes it, `answers` has what came back."""

    _CLOSE = object()

    def __init__(self, handler: FakeHandler) -> None:
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self.answers: queue.SimpleQueue = queue.SimpleQueue()
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(handler,), daemon=True)
        self._thread.start()

    def _incoming(self):
        while (item := self._requests.get()) is not self._CLOSE:
            yield item

    def _serve(self, handler: FakeHandler) -> None:
        for answer in serve_produce_stream(handler, self._incoming(), CLOCK, lambda: False):
            self.answers.put((time.monotonic(), answer))
        self.ended.set()

    def send(self, request: log_pb2.ProduceStreamRequest) -> None:
        self._requests.put(request)

    def close(self) -> None:
        self._requests.put(self._CLOSE)


def test_answers_go_out_as_requests_complete_and_parked_ones_when_the_hw_lets_them():
    handler = FakeHandler()
    stream = Stream(handler)
    stream.send(message(1))
    stream.send(message(2, acks=1))
    _, first = stream.answers.get(timeout=5)
    assert first.request_id == 2, "an acks=1 request is not held behind a parked acks=-1 one"
    handler.complete_all()
    _, second = stream.answers.get(timeout=5)
    assert second.request_id == 1 and second.produce.partitions[0].base_offset == 7
    stream.close()
    assert stream.ended.wait(5)
    assert handler.expired == 0


def test_a_parked_request_expires_at_its_deadline_though_the_sender_sleeps_towards_a_later_one():
    handler = FakeHandler()
    stream = Stream(handler)
    stream.send(message(1, timeout_ms=30_000))  # the sender now sleeps towards this (or its idle look)
    time.sleep(0.05)
    sent = time.monotonic()
    stream.send(message(2, timeout_ms=150))  # earlier than anything the sender waits for
    answered_at, answer = stream.answers.get(timeout=5)
    assert answer.request_id == 2
    assert answer.produce.partitions[0].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert 0.14 <= answered_at - sent < 0.14 + produce_stream.IDLE_MS / 2000, "expired at its own deadline"
    handler.complete_all()
    assert stream.answers.get(timeout=5)[1].request_id == 1
    stream.close()
    assert stream.ended.wait(5)


def test_a_request_parked_with_nothing_else_waiting_still_expires_on_time():
    handler = FakeHandler()
    stream = Stream(handler)
    time.sleep(0.05)  # the sender is asleep with nothing parked
    sent = time.monotonic()
    stream.send(message(1, timeout_ms=200))
    answered_at, answer = stream.answers.get(timeout=5)
    assert answer.produce.partitions[0].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert 0.19 <= answered_at - sent < 0.19 + produce_stream.IDLE_MS / 2000
    stream.close()
    assert stream.ended.wait(5)


def test_a_request_parked_past_the_senders_idle_look_wakes_nobody_and_still_expires_on_time():
    handler = FakeHandler()
    stream = Stream(handler)
    time.sleep(0.05)
    timeout_ms = produce_stream.IDLE_MS + 300  # later than the sender's idle look: booked, nobody woken
    sent = time.monotonic()
    stream.send(message(1, timeout_ms=timeout_ms))
    answered_at, answer = stream.answers.get(timeout=10)
    assert answer.produce.partitions[0].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert timeout_ms / 1000 - 0.01 <= answered_at - sent < timeout_ms / 1000 + 0.2
    stream.close()
    assert stream.ended.wait(5)


def test_a_half_closed_stream_ends_only_once_every_request_read_is_answered():
    handler = FakeHandler()
    stream = Stream(handler)
    for request_id in range(5):
        stream.send(message(request_id))
    stream.close()
    assert not stream.ended.wait(0.3), "ended with five requests still parked"
    handler.complete_all()
    assert stream.ended.wait(5)
    answered = sorted(stream.answers.get(timeout=1)[1].request_id for _ in range(5))
    assert answered == [0, 1, 2, 3, 4]


def test_a_request_without_a_produce_is_refused_and_the_stream_goes_on():
    handler = FakeHandler()
    stream = Stream(handler)
    stream.send(log_pb2.ProduceStreamRequest(request_id=9))
    _, refused = stream.answers.get(timeout=5)
    assert refused.request_id == 9 and refused.error_code == ErrorCode.INVALID_REQUEST
    stream.send(message(10, acks=1))
    assert stream.answers.get(timeout=5)[1].request_id == 10
    stream.close()
    assert stream.ended.wait(5)
