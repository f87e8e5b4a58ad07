"""A fetcher's ReplicaFetchStream to its leader: one request out, its response back, in turns.

Theory of operation (replication.proto, ReplicationService.ReplicaFetchStream):
a follower makes one round trip per acks=all write, and a message on an open
stream costs both ends less than a unary call (docs/perf/fetch-stream.md), so
the stream stays open for the fetcher's life and carries each request as a
message.

`exchange` sends a request and waits for its response, like `result()` of a
unary call: it raises `grpc.RpcError` when the stream fails, is cancelled or
its deadline passes, and `StreamEnded` when the leader ends it (it is
stopping). Either way the stream is finished and the fetcher opens another;
after a deadline passed (`timed_out`), on a new channel (fetcher.py).
`cancel` (any thread, any number of times) ends it, and with it the exchange
in flight, as a cancelled unary call would; it also ends the request iterator,
whose gRPC feeder thread would otherwise wait on it for good, so a finished
stream is always cancelled.

A stream has no per-message deadline, so one watchdog thread per process
cancels a stream whose exchange has been waiting longer than it was given (a
stopped leader answers nothing). It looks twice a second: a deadline is only
the backstop for a peer that stopped answering; a live leader answers within
the long poll's wait.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref

import grpc

from replog.v1 import replication_pb2, replication_pb2_grpc

WATCHDOG_INTERVAL_S = 0.5

_CLOSE = object()  # ends the request iterator


class StreamEnded(Exception):
    """The leader ended the stream (OK status) before answering the request."""


class FetchStream:
    def __init__(self, channel: grpc.Channel) -> None:
        self.channel = channel
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        stub = replication_pb2_grpc.ReplicationServiceStub(channel)
        self._responses = stub.ReplicaFetchStream(iter(self._requests.get, _CLOSE))
        self._due: float | None = None  # monotonic time by which the exchange in flight must end
        self.timed_out = False
        _watchdog.watch(self)

    def exchange(self, request, timeout_s: float):
        self._due = time.monotonic() + timeout_s
        self._requests.put(replication_pb2.ReplicaFetchStreamRequest(fetch=request))
        try:
            return next(self._responses).fetch
        except StopIteration:
            raise StreamEnded("the leader ended the fetch stream") from None
        finally:
            self._due = None

    def cancel(self) -> None:
        self._responses.cancel()
        self._requests.put(_CLOSE)

    def overdue(self, now: float) -> bool:
        due = self._due
        return due is not None and now > due


class _Watchdog:
    """Cancels streams whose exchange is overdue; one daemon thread, started with the first stream."""

    def __init__(self) -> None:
        self._streams: weakref.WeakSet[FetchStream] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, stream: FetchStream) -> None:
        with self._lock:
            self._streams.add(stream)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fetch-stream-deadlines", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL_S)
            now = time.monotonic()
            with self._lock:
                overdue = [s for s in self._streams if s.overdue(now)]
            for stream in overdue:
                stream.timed_out = True
                stream.cancel()


_watchdog = _Watchdog()


def describe_failure(stream: FetchStream, exc: BaseException) -> str:
    """Why an exchange on `stream` failed, for the fetcher's log line."""
    if stream.timed_out:
        return "no answer in time"
    if isinstance(exc, StreamEnded):
        return "the leader ended the stream"
    return exc.code().name if isinstance(exc, grpc.RpcError) else "CANCELLED"
