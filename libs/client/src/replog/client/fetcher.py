"""The consumer's fetcher: reads ahead of the application, one Fetch outstanding per leader broker.

Theory of operation. One background thread keeps, for every leader broker of an assigned
partition, one long-polling Fetch in flight (gRPC futures; their completions come back to the
thread through one queue). An answer's record bytes are buffered undecoded as `Chunk`s, one per
partition with data, and the partition's *fetch position* moves past the answer's last whole batch
(read from batch headers only), so the next Fetch to that leader leaves at once. The consumer's
thread takes chunks (`take`) and decodes them when it reaches them. No Fetch leaves while
`buffer_bytes_max` bytes or more wait to be taken: the read-ahead is bounded by bytes buffered.

A `seek` moves a partition's fetch position and bumps its *generation*: chunks buffered and
answers in flight from before the seek are dropped, so nothing is read twice or skipped. A
partition answered with OFFSET_OUT_OF_RANGE stops being fetched and its error is handed to the
consumer thread as a chunk (which raises it, or seeks, as the consumer is configured); any
other partition error, or a failed Fetch, refreshes metadata and fetches again. Metadata is also
refreshed every `retry_backoff_s` while a partition has no known leader, and every
`metadata_max_age_s` in any case. A Fetch gets `FETCH_SLACK_S` past its long-poll wait: a leader
that stopped answering (paused, cut off) costs that much once; from then on it is *suspect* (until a
Fetch to it is answered) and metadata is refreshed every `retry_backoff_s` while a partition is led by
a suspect broker, so its partitions move to their new leader as soon as metadata names it, not after
another Fetch to the silent one times out. The other leaders' partitions are read meanwhile.

Client quotas (docs/quotas.md): an answer's `throttle_time_ms` says the consumer's user went over its
fetch quota on that broker; the next Fetch to that broker leaves once that time has passed. (A Fetch
sent sooner would be answered with no records and the time left.)

`lock` (a Condition) guards the positions, generations and the buffer; the thread alone owns the
calls in flight and the throttles.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from dataclasses import dataclass

import grpc

from replog.client.metadata import MetadataCache
from replog.common import records as rec
from replog.v1 import common_pb2, log_pb2

# A broker answers a long poll when its wait ends: this much later, the leader is taken as gone
# (a slow answer only costs one fetch and a metadata refresh; nothing is skipped or read twice).
FETCH_SLACK_S = 2.0
IDLE_WAIT_S = 0.05  # the thread's wait for an answer when it has nothing to send


@dataclass(frozen=True)
class Chunk:
    """One partition's part of a Fetch answer: undecoded whole batches from `start_offset`, or an error."""

    partition: int
    generation: int
    records: bytes
    start_offset: int
    high_watermark: int
    error_code: int = common_pb2.ERROR_CODE_NONE
    error_message: str = ""
    log_start_offset: int = -1


class Fetcher:
    def __init__(self, metadata: MetadataCache, topic: str, *, fetch_max_bytes: int, max_wait_ms: int,
                 buffer_bytes_max: int, retry_backoff_s: float, metadata_max_age_s: float) -> None:
        self.metadata = metadata
        self.topic = topic
        self.fetch_max_bytes = fetch_max_bytes
        self.max_wait_ms = max_wait_ms
        self.buffer_bytes_max = buffer_bytes_max
        self.retry_backoff_s = retry_backoff_s
        self.metadata_max_age_s = metadata_max_age_s
        self.lock = threading.Condition()
        self._positions: dict[int, int] = {}  # partition -> next offset to fetch
        self._generations: dict[int, int] = {}
        self._stopped: set[int] = set()  # partitions answered OFFSET_OUT_OF_RANGE, until a seek
        self._chunks: collections.deque[Chunk] = collections.deque()
        self._buffered_bytes = 0
        self._closed = False
        self._in_flight: dict[str, object] = {}  # leader address -> its Fetch call (this thread only)
        self._suspect: set[str] = set()  # addresses whose last Fetch failed (this thread only)
        self._throttled_until_s: dict[str, float] = {}  # address -> when its throttle ends (this thread only)
        self._answers: queue.SimpleQueue = queue.SimpleQueue()
        self._metadata_due_s = time.monotonic() + metadata_max_age_s
        self._metadata_tried_at_s = float("-inf")
        self._thread = threading.Thread(target=self._run, name="consumer-fetcher", daemon=True)

    # --- the consumer's thread ---------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def seek(self, partition: int, offset: int) -> None:
        """Fetch `partition` from `offset` on (it is assigned, if it was not); what was read ahead of it
        is dropped."""
        with self.lock:
            self._positions[partition] = offset
            self._generations[partition] = self._generations.get(partition, 0) + 1
            self._stopped.discard(partition)
            self._drop_locked(lambda c: c.partition == partition)
        self._answers.put(None)  # the thread sends at once

    def unassign(self, partition: int) -> None:
        with self.lock:
            self._positions.pop(partition, None)
            self._generations[partition] = self._generations.get(partition, 0) + 1
            self._drop_locked(lambda c: c.partition == partition)

    def is_current(self, chunk: Chunk) -> bool:
        return self._generations.get(chunk.partition) == chunk.generation

    def take(self, timeout_s: float) -> Chunk | None:
        """The oldest chunk read ahead, waiting up to `timeout_s` for one."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while not self._chunks:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return None
                self.lock.wait(remaining)
            chunk = self._chunks.popleft()
            was_full = self._buffered_bytes >= self.buffer_bytes_max
            self._buffered_bytes -= len(chunk.records)
        if was_full:
            self._answers.put(None)
        return chunk

    def close(self) -> None:
        with self.lock:
            self._closed = True
            self.lock.notify_all()
        self._answers.put(None)
        self._thread.join(timeout=5)
        for call in list(self._in_flight.values()):
            call.cancel()

    def _drop_locked(self, which) -> None:
        kept = collections.deque(c for c in self._chunks if not which(c))
        self._buffered_bytes = sum(len(c.records) for c in kept)
        self._chunks = kept

    # --- the fetcher's thread ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self.lock:
                if self._closed:
                    return
            now = time.monotonic()
            if now >= self._metadata_due_s:
                self._refresh()
            self._send_fetches()
            wait_s = IDLE_WAIT_S if not self._in_flight else min(0.5, self._metadata_due_s - time.monotonic())
            if self._throttled_until_s:  # wake when a throttle ends, to send that broker's Fetch
                now = time.monotonic()
                wait_s = min([wait_s, *(until - now for until in self._throttled_until_s.values() if until > now)])
            try:
                answer = self._answers.get(timeout=max(wait_s, 0.001))
            except queue.Empty:
                continue
            while answer is not None:
                self._accept(*answer)
                try:
                    answer = self._answers.get_nowait()
                except queue.Empty:
                    answer = None

    def _send_fetches(self) -> None:
        with self.lock:
            if self._buffered_bytes >= self.buffer_bytes_max:
                return
            wanted = {p: (offset, self._generations[p]) for p, offset in self._positions.items()
                      if p not in self._stopped}
        by_leader: dict[str, dict[int, tuple[int, int]]] = {}
        for p, sent in wanted.items():
            leader = self.metadata.leader_address(self.topic, p)
            if leader is None or leader[0] in self._suspect:  # until it has a leader that answers
                self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)
            if leader is not None:
                by_leader.setdefault(leader[0], {})[p] = sent
        if self._throttled_until_s:
            now = time.monotonic()
            self._throttled_until_s = {a: until for a, until in self._throttled_until_s.items() if until > now}
        for address, sent in by_leader.items():
            if address in self._in_flight or address in self._throttled_until_s:
                continue  # one Fetch at a time; and none while its quota's throttle lasts
            request = log_pb2.FetchRequest(
                max_wait_ms=self.max_wait_ms, min_bytes=1, max_bytes=self.fetch_max_bytes,
                partitions=[log_pb2.FetchPartition(topic=self.topic, partition=p, fetch_offset=offset,
                                                   current_leader_epoch=-1) for p, (offset, _) in sent.items()])
            try:
                call = self.metadata.stub(address).Fetch.future(request,
                                                                timeout=self.max_wait_ms / 1000 + FETCH_SLACK_S)
            except Exception:  # noqa: BLE001 - a channel that cannot even start a call: like a failed fetch
                self._failed(address)
                continue
            self._in_flight[address] = call
            call.add_done_callback(lambda done, a=address, s=sent: self._answers.put((a, s, done)))

    def _accept(self, address: str, sent: dict[int, tuple[int, int]], call) -> None:
        self._in_flight.pop(address, None)
        try:
            reply = call.result()
        except (grpc.RpcError, grpc.FutureCancelledError):
            self._failed(address)
            return
        self._suspect.discard(address)
        if reply.throttle_time_ms:
            self._throttled_until_s[address] = time.monotonic() + reply.throttle_time_ms / 1000
        with self.lock:
            for data in reply.partitions:
                p = data.partition
                offset, generation = sent.get(p, (-1, -1))
                if self._generations.get(p) != generation or self._positions.get(p) != offset:
                    continue  # sought (or unassigned) since: the answer is stale
                if data.error_code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE:
                    self._stopped.add(p)
                    self._chunks.append(Chunk(p, generation, b"", offset, data.high_watermark, data.error_code,
                                              data.error_message, data.log_start_offset))
                elif data.error_code != common_pb2.ERROR_CODE_NONE:
                    self._refresh_by(time.monotonic())
                elif data.records:
                    # Not past the high watermark: records above it are not returned, so are fetched again.
                    next_offset = min(_after_whole_batches(data.records, offset), max(data.high_watermark, offset))
                    if next_offset > offset:
                        self._positions[p] = next_offset
                        self._chunks.append(Chunk(p, generation, data.records, offset, data.high_watermark))
                        self._buffered_bytes += len(data.records)
            if self._chunks:
                self.lock.notify_all()

    def _failed(self, address: str) -> None:
        self._suspect.add(address)
        self.metadata.mark_unreachable(address)
        self._refresh()

    def _refresh_by(self, due_s: float) -> None:
        self._metadata_due_s = min(self._metadata_due_s, due_s)

    def _refresh(self) -> None:
        self._metadata_tried_at_s = time.monotonic()
        self._metadata_due_s = self._metadata_tried_at_s + self.metadata_max_age_s
        try:
            self.metadata.refresh([self.topic])
        except Exception:  # noqa: BLE001 - tried again soon
            self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)


def _after_whole_batches(records: bytes, offset: int) -> int:
    """The offset after the last whole batch in `records` (`offset` if there is none)."""
    next_offset = offset
    for _, header in rec.iter_batches(records):
        next_offset = max(next_offset, header.next_offset)
    return next_offset
