"""Ends request streams whose caller has sent nothing for too long.

A request stream (a ProduceStream, a follower's fetch stream, a reflection stream) holds a handler
thread for its whole life, and most of that life the thread waits for the caller's next message.
A caller that opens a stream and then says nothing -- a crashed client whose connection lingers, or
one holding threads on purpose -- would hold it for good; gRPC's keepalive finds a peer that is gone,
not one that is there and silent. So each stream tells this watcher when it starts and stops waiting
for a message, and a thread cancels the streams that have waited longer than `idle_ms_max` (the
caller sees CANCELLED; our clients open a new stream when they next have something to send).

Waiting on a handler's answer does not count: a follower's fetch that long-polls, or a produce
waiting for its replicas, is the server's time, not the caller's. One thread per server checks
every `check_interval_s`; its cost is a pass over the open streams.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterator

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 1.0


class _Stream:
    __slots__ = ("context", "method", "peer", "waiting_since_s")

    def __init__(self, context, method: str, peer: str) -> None:
        self.context = context
        self.method = method
        self.peer = peer
        self.waiting_since_s: float | None = None


class IdleStreams:
    def __init__(self, idle_ms_max: int, *, monotonic_s: Callable[[], float] = time.monotonic,
                 check_interval_s: float = CHECK_INTERVAL_S) -> None:
        assert idle_ms_max > 0, idle_ms_max
        self.idle_s_max = idle_ms_max / 1000
        self._monotonic_s = monotonic_s
        self._check_interval_s = check_interval_s
        self._lock = threading.Lock()
        self._streams: set[_Stream] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def watched(self, requests: Iterator, context, method: str) -> Iterator:
        """`requests`, noting while the stream waits for the caller's next one."""
        stream = _Stream(context, method, context.peer())
        with self._lock:
            self._streams.add(stream)
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, name="idle-streams", daemon=True)
                self._thread.start()
        monotonic_s = self._monotonic_s
        try:
            while True:
                stream.waiting_since_s = monotonic_s()
                try:
                    request = next(requests)
                except StopIteration:
                    return
                stream.waiting_since_s = None
                yield request
        finally:
            stream.waiting_since_s = None
            with self._lock:
                self._streams.discard(stream)

    def end_idle(self) -> int:
        """Cancel every stream idle longer than the bound; how many were."""
        now = self._monotonic_s()
        with self._lock:
            idle = [s for s in self._streams
                    if s.waiting_since_s is not None and now - s.waiting_since_s > self.idle_s_max]
        for stream in idle:
            log.info("ending %s from %s: the caller sent nothing for over %.0f s (stream_idle_ms_max)",
                     stream.method, stream.peer, self.idle_s_max)
            stream.waiting_since_s = None
            stream.context.cancel()
        return len(idle)

    @property
    def open(self) -> int:
        with self._lock:
            return len(self._streams)

    def stop(self) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.wait(self._check_interval_s):
            try:
                self.end_idle()
            except Exception:  # noqa: BLE001 - the watcher must outlive one bad pass; it logs why
                log.exception("checking for idle streams failed")
