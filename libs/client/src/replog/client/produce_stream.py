"""The producer's ProduceStream to one broker: requests out in order, answers back by request id.

Theory of operation (log.proto, LogService.ProduceStream): the broker appends
a stream's requests in the order sent and answers each when it completes, so
the producer may keep several requests in flight and still have a partition's
batches appended in sequence order. One stream per broker, opened on first use.

`send` queues a request (gRPC's feeder thread writes it); one reader thread per
stream takes the answers and hands each, with what was sent, to `on_answer`.
When the stream fails, is cancelled or ends, every request still unanswered is
handed to `on_lost` (it may or may not have been appended), and the stream is
`broken`: the producer opens another for its next request. A stream has no
per-request deadline: the producer's sender loop cancels one whose oldest
unanswered request (`unanswered_s`) has waited too long, a broker that
stopped answering without closing the connection, and, with idempotence, one
holding a request (`outstanding`) for a partition that has a new leader.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

import grpc

from replog.common import hopmarks
from replog.common.hopmarks import Hop
from replog.v1 import log_pb2, log_pb2_grpc

_CLOSE = object()  # ends the request iterator (half-closes the stream)


class ProduceStream:
    def __init__(self, channel: grpc.Channel, on_answer: Callable[[Any, log_pb2.ProduceStreamResponse], None],
                 on_lost: Callable[[Any, str], None]) -> None:
        self._on_answer = on_answer
        self._on_lost = on_lost
        self._lock = threading.Lock()
        # request id -> (what was sent, when); in request id order, so the first is the oldest
        self._pending: dict[int, tuple[Any, float]] = {}
        self._next_id = 0
        self.broken = False
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._call = log_pb2_grpc.LogServiceStub(channel).ProduceStream(iter(self._requests.get, _CLOSE))
        self._reader = threading.Thread(target=self._read, name="producer-stream", daemon=True)
        self._reader.start()

    def send(self, message: log_pb2.ProduceStreamRequest, sent: Any, sent_at_s: float) -> bool:
        """Queue a request (its `produce` filled in; the stream sets `request_id`); False if the
        stream is broken (nothing was sent: open another and send it there)."""
        with self._lock:
            if self.broken:
                return False
            request_id = self._next_id
            self._next_id += 1
            self._pending[request_id] = (sent, sent_at_s)
            message.request_id = request_id
            hopmarks.mark(Hop.PRODUCER_SENDS)
            self._requests.put(message)
        return True

    def unanswered_s(self, now_s: float) -> float:
        """How long the oldest request still unanswered has waited (0 when none is)."""
        with self._lock:
            oldest = next(iter(self._pending.values()), None)
        return 0.0 if oldest is None else now_s - oldest[1]

    def outstanding(self) -> list[Any]:
        """What was sent with each request still unanswered, oldest first."""
        with self._lock:
            return [sent for sent, _ in self._pending.values()]

    def cancel(self) -> None:
        """End the stream: what it holds is handed to `on_lost`, and nothing more is sent on it."""
        with self._lock:
            self.broken = True
        self._call.cancel()
        self._requests.put(_CLOSE)

    def close(self) -> None:
        """Half-close: the broker answers what it holds, then ends the stream."""
        self._requests.put(_CLOSE)

    def _read(self) -> None:
        why = "the broker ended the produce stream"
        try:
            for response in self._call:
                hopmarks.mark(Hop.PRODUCER_HAS_ANSWER)
                with self._lock:
                    entry = self._pending.pop(response.request_id, None)
                if entry is not None:
                    self._on_answer(entry[0], response)
        except grpc.RpcError as exc:
            why = f"{exc.code().name}: {exc.details()}"
        finally:
            with self._lock:
                self.broken = True
                lost = list(self._pending.values())
                self._pending.clear()
            self._requests.put(_CLOSE)  # ends gRPC's feeder thread, which would wait for good
            for sent, _ in lost:
                self._on_lost(sent, why)

