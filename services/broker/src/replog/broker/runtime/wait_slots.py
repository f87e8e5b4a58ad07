"""A bound on client requests that park a gRPC handler thread, so replication always has threads.

Theory of operation (docs/architecture.md, "An acks=all produce"): the broker's gRPC server is
synchronous; an acks=-1 Produce waiting for the HW and a consumer Fetch
long-polling each hold one of its `grpc_workers` threads. Kafka's purgatory
holds no thread, ours does. Without a bound, enough waiting client requests
take every thread, the followers' ReplicaFetch cannot be served, the HW
cannot move, and every waiting produce times out (docs/perf/wait-slots.md).

So client waits take a slot first, and `RESERVED_THREADS` of the workers are
never given to them (followers' fetches, the controller's requests). With no
slot free, an acks=-1 Produce is refused before anything is appended
(REQUEST_TIMED_OUT, retriable and safe to retry), and a Fetch answers
with what it has at once instead of waiting.
"""

from __future__ import annotations

import threading

RESERVED_THREADS = 16


class WaitSlots:
    def __init__(self, grpc_workers: int) -> None:
        self.capacity = max(grpc_workers - RESERVED_THREADS, grpc_workers // 2, 1)
        self._semaphore = threading.BoundedSemaphore(self.capacity)

    def try_take(self) -> bool:
        return self._semaphore.acquire(blocking=False)

    def give_back(self) -> None:
        self._semaphore.release()
