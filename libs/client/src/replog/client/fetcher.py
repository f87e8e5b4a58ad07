"""The consumer's fetcher: reads ahead of the application, one Fetch outstanding per leader broker.

Theory of operation. One background thread keeps, for every leader broker of an assigned
partition (of any topic), one long-polling Fetch in flight (gRPC futures; their completions come
back to the thread through one queue). An answer's record bytes are buffered undecoded as `Chunk`s,
one per partition with data, and the partition's *fetch position* moves past the answer's last whole
batch (read from batch headers only), so the next Fetch to that leader leaves at once. The consumer's
thread takes chunks (`take`) and decodes them when it reaches them. No Fetch leaves while
`buffer_bytes_max` bytes or more wait to be taken: the read-ahead is bounded by bytes buffered. A
paused partition is not fetched, and its chunks wait in the buffer until it is resumed.

A `seek` moves a partition's fetch position and bumps its *generation*: chunks buffered and
answers in flight from before the seek are dropped, so nothing is read twice or skipped. A
partition answered with OFFSET_OUT_OF_RANGE stops being fetched and its error is handed to the
consumer thread as a chunk (which raises it, or seeks, as the consumer is configured); any
other partition error refreshes metadata and asks for the partition again after `retry_backoff_s`,
and a failed Fetch refreshes metadata (at most once a `retry_backoff_s`) and leaves its broker alone
for `retry_backoff_s`. Metadata is also refreshed every `retry_backoff_s` while a
partition has no known leader, and every `metadata_max_age_s` in any case. A Fetch gets
`FETCH_SLACK_S` past its long-poll wait: a leader that stopped answering (paused, cut off) costs
that much once; from then on it is *suspect* (until a Fetch to it is answered) and metadata is
refreshed every `retry_backoff_s` while a partition is led by a suspect broker, so its partitions
move to their new leader as soon as metadata names it, not after another Fetch to the silent one
times out. The other leaders' partitions are read meanwhile.

Leader epochs (KIP-320, the consumer's half). Every Fetch carries the leader epoch metadata names
(`current_leader_epoch`), so a leader that has moved on or is behind refuses it instead of serving
from a log the client did not mean. The fetcher remembers the leader epoch of the last batch before
each fetch position. When metadata names a newer leader epoch than that one, the position is
*validated* before the partition is fetched again: OffsetsForLeaderEpochs asks the leader where that
epoch ends in its log. An end below the fetch position means the new leader's log diverges there
(records were truncated away, as after an unclean election): the partition stops and a chunk with
`divergent_offset` goes to the consumer thread, which compares it with what it has returned and
moves or raises (consumer.py). An answer that knows nothing of the epoch validates nothing; the
fetch then goes on and the leader's own checks (out of range) apply.

`lock` (a Condition) guards the positions, generations, epochs and the buffer; the thread alone
owns the calls in flight and the throttles.

Client quotas (docs/quotas.md): an answer's `throttle_time_ms` says the consumer's user went over its
fetch quota on that broker; the next Fetch to that broker leaves once that time has passed. (A Fetch
sent sooner would be answered with no records and the time left.)
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
from replog.common.core.partitions import TopicPartition
from replog.v1 import common_pb2, log_pb2

# A broker answers a long poll when its wait ends: this much later, the leader is taken as gone
# (a slow answer only costs one fetch and a metadata refresh; nothing is skipped or read twice).
FETCH_SLACK_S = 2.0
IDLE_WAIT_S = 0.05  # the thread's wait for an answer when it has nothing to send
VALIDATE_TIMEOUT_S = 10.0
NO_EPOCH = -1
TRUNCATED = -2  # Chunk.error_code of a divergence found by validation (not a broker's code)


@dataclass(frozen=True)
class Chunk:
    """One partition's part of a Fetch answer: undecoded whole batches from `start_offset`, or an error.
    `batch_ends` holds (base offset, next offset, leader epoch) of each batch, for the consumer's epoch of
    a position;
    `divergent_offset` is where the leader's log diverges (error_code TRUNCATED)."""

    tp: TopicPartition
    generation: int
    records: bytes
    start_offset: int
    high_watermark: int
    error_code: int = common_pb2.ERROR_CODE_NONE
    error_message: str = ""
    log_start_offset: int = -1
    batch_ends: tuple[tuple[int, int, int], ...] = ()
    divergent_offset: int = -1


class Fetcher:
    def __init__(self, metadata: MetadataCache, *, fetch_max_bytes: int, max_wait_ms: int,
                 buffer_bytes_max: int, retry_backoff_s: float, metadata_max_age_s: float) -> None:
        self.metadata = metadata
        self.fetch_max_bytes = fetch_max_bytes
        self.max_wait_ms = max_wait_ms
        self.buffer_bytes_max = buffer_bytes_max
        self.retry_backoff_s = retry_backoff_s
        self.metadata_max_age_s = metadata_max_age_s
        self.lock = threading.Condition()
        self._positions: dict[TopicPartition, int] = {}  # next offset to fetch
        self._generations: dict[TopicPartition, int] = {}
        self._epochs: dict[TopicPartition, int] = {}  # leader epoch of the last batch before the position
        self._validated: dict[TopicPartition, int] = {}  # the leader epoch the position was validated at
        self._stopped: set[TopicPartition] = set()  # out of range or diverged, until a seek
        self._paused: set[TopicPartition] = set()
        self._backoff_until_s: dict[TopicPartition, float] = {}  # a partition refused: not asked again before
        self._chunks: collections.deque[Chunk] = collections.deque()
        self._buffered_bytes = 0
        self._closed = False
        self._in_flight: dict[str, object] = {}  # leader address -> its Fetch call (this thread only)
        self._throttled_until_s: dict[str, float] = {}  # address -> when its throttle ends (this thread only)
        self._validating: set[str] = set()  # addresses with an OffsetsForLeaderEpochs in flight (this thread)
        self._suspect: set[str] = set()  # addresses whose last Fetch failed (this thread only)
        self._address_backoff_until_s: dict[str, float] = {}  # a failed address: not called before (this thread)
        self._answers: queue.SimpleQueue = queue.SimpleQueue()
        self._metadata_due_s = time.monotonic() + metadata_max_age_s
        self._metadata_tried_at_s = float("-inf")
        self._thread = threading.Thread(target=self._run, name="consumer-fetcher", daemon=True)

    # --- the consumer's thread ---------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int = NO_EPOCH) -> None:
        """Fetch `tp` from `offset` on (it is assigned, if it was not); what was read ahead of it is
        dropped. `leader_epoch`: that of the record before `offset`, when known (a committed offset's):
        the position is then validated against the leader's log before the first fetch."""
        with self.lock:
            self._positions[tp] = offset
            self._generations[tp] = self._generations.get(tp, 0) + 1
            self._epochs[tp] = leader_epoch
            self._validated.pop(tp, None)
            self._backoff_until_s.pop(tp, None)
            self._stopped.discard(tp)
            self._drop_locked(lambda c: c.tp == tp)
        self._answers.put(None)  # the thread sends at once

    def unassign(self, tp: TopicPartition) -> None:
        with self.lock:
            self._positions.pop(tp, None)
            self._epochs.pop(tp, None)
            self._validated.pop(tp, None)
            self._paused.discard(tp)
            self._generations[tp] = self._generations.get(tp, 0) + 1
            self._drop_locked(lambda c: c.tp == tp)

    def pause(self, tp: TopicPartition) -> None:
        with self.lock:
            self._paused.add(tp)

    def resume(self, tp: TopicPartition) -> None:
        with self.lock:
            self._paused.discard(tp)
            if any(c.tp == tp for c in self._chunks):
                self.lock.notify_all()
        self._answers.put(None)

    def topics(self) -> list[str]:
        with self.lock:
            return sorted({tp.topic for tp in self._positions})

    def is_current(self, chunk: Chunk) -> bool:
        return self._generations.get(chunk.tp) == chunk.generation

    def take(self, timeout_s: float) -> Chunk | None:
        """The oldest chunk read ahead of a partition not paused, waiting up to `timeout_s` for one."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while True:
                chunk = self._first_unpaused_locked()
                if chunk is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return None
                self.lock.wait(remaining)
            was_full = self._buffered_bytes >= self.buffer_bytes_max
            self._buffered_bytes -= len(chunk.records)
        if was_full:
            self._answers.put(None)
        return chunk

    def _first_unpaused_locked(self) -> Chunk | None:
        chunks = self._chunks
        if not chunks:
            return None
        if not self._paused:
            return chunks.popleft()
        for i, chunk in enumerate(chunks):
            if chunk.tp not in self._paused:
                del chunks[i]
                return chunk
        return None

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
                if answer[0] == "validated":
                    self._accept_validation(*answer[1:])
                else:
                    self._accept(*answer)
                try:
                    answer = self._answers.get_nowait()
                except queue.Empty:
                    answer = None

    def _send_fetches(self) -> None:
        with self.lock:
            if self._buffered_bytes >= self.buffer_bytes_max:
                return
            now_s = time.monotonic()
            wanted = {tp: (offset, self._generations[tp], self._epochs.get(tp, NO_EPOCH),
                           self._validated.get(tp)) for tp, offset in self._positions.items()
                      if tp not in self._stopped and tp not in self._paused
                      and self._backoff_until_s.get(tp, 0.0) <= now_s}
        by_leader: dict[str, dict[TopicPartition, tuple[int, int, int]]] = {}
        to_validate: dict[str, dict[TopicPartition, tuple[int, int, int, int]]] = {}
        for tp, (offset, generation, last_epoch, validated) in wanted.items():
            leader = self.metadata.leader_address(tp.topic, tp.partition)
            if leader is None or leader[0] in self._suspect:  # until it has a leader that answers
                self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)
            if leader is None:
                continue
            address, leader_epoch = leader
            if last_epoch != NO_EPOCH and leader_epoch > last_epoch and validated != leader_epoch:
                to_validate.setdefault(address, {})[tp] = (offset, generation, last_epoch, leader_epoch)
            else:
                by_leader.setdefault(address, {})[tp] = (offset, generation, leader_epoch)
        if self._address_backoff_until_s:
            self._address_backoff_until_s = {a: until for a, until in self._address_backoff_until_s.items()
                                             if until > now_s}
        for address, sent in to_validate.items():
            if address not in self._validating and address not in self._address_backoff_until_s:
                self._validate(address, sent)
        if self._throttled_until_s:
            now = time.monotonic()
            self._throttled_until_s = {a: until for a, until in self._throttled_until_s.items() if until > now}
        for address, sent in by_leader.items():
            if (address in self._in_flight or address in self._throttled_until_s
                    or address in self._address_backoff_until_s):
                continue  # one Fetch at a time; none while its quota's throttle lasts, or after a failure
            request = log_pb2.FetchRequest(
                max_wait_ms=self.max_wait_ms, min_bytes=1, max_bytes=self.fetch_max_bytes,
                partitions=[log_pb2.FetchPartition(topic=tp.topic, partition=tp.partition, fetch_offset=offset,
                                                   current_leader_epoch=epoch)
                            for tp, (offset, _, epoch) in sent.items()])
            try:
                call = self.metadata.stub(address).Fetch.future(request,
                                                                timeout=self.max_wait_ms / 1000 + FETCH_SLACK_S)
            except Exception:  # noqa: BLE001 - a channel that cannot even start a call: like a failed fetch
                self._failed(address)
                continue
            self._in_flight[address] = call
            call.add_done_callback(lambda done, a=address, s=sent: self._answers.put((a, s, done)))

    def _accept(self, address: str, sent: dict[TopicPartition, tuple[int, int, int]], call) -> None:
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
                tp = TopicPartition(data.topic, data.partition)
                offset, generation, leader_epoch = sent.get(tp, (-1, -1, NO_EPOCH))
                if self._generations.get(tp) != generation or self._positions.get(tp) != offset:
                    continue  # sought (or unassigned) since: the answer is stale
                if data.error_code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE:
                    self._stopped.add(tp)
                    self._chunks.append(Chunk(tp, generation, b"", offset, data.high_watermark, data.error_code,
                                              data.error_message, data.log_start_offset))
                elif data.error_code != common_pb2.ERROR_CODE_NONE:
                    # NOT_LEADER, a fenced or unknown leader epoch, ...: metadata is behind the leaders, or a
                    # leader behind metadata. Refresh now, ask this partition again after a backoff.
                    self._refresh_by(time.monotonic())
                    self._backoff_until_s[tp] = time.monotonic() + self.retry_backoff_s
                else:
                    self._validated[tp] = leader_epoch  # this leader served the position: nothing to validate
                    if data.records:
                        self._buffer_locked(tp, generation, offset, data)
            if self._chunks:
                self.lock.notify_all()

    def _buffer_locked(self, tp: TopicPartition, generation: int, offset: int, data) -> None:
        # Not past the high watermark: records above it are not returned, so are fetched again.
        limit = max(data.high_watermark, offset)
        ends = []
        next_offset = offset
        for _, header in rec.iter_batches(data.records):
            if header.base_offset >= limit:
                break
            ends.append((header.base_offset, header.next_offset, header.partition_leader_epoch))
            next_offset = max(next_offset, header.next_offset)
        next_offset = min(next_offset, limit)
        if next_offset > offset:
            self._positions[tp] = next_offset
            self._epochs[tp] = ends[-1][2]
            self._chunks.append(Chunk(tp, generation, data.records, offset, data.high_watermark,
                                      batch_ends=tuple(ends)))
            self._buffered_bytes += len(data.records)

    # --- validating positions (KIP-320) -------------------------------------------------------

    def _validate(self, address: str, sent: dict[TopicPartition, tuple[int, int, int, int]]) -> None:
        request = log_pb2.OffsetsForLeaderEpochsRequest(partitions=[
            log_pb2.LeaderEpochQuery(topic=tp.topic, partition=tp.partition, current_leader_epoch=current,
                                     leader_epoch=last) for tp, (_, _, last, current) in sent.items()])
        try:
            call = self.metadata.stub(address).OffsetsForLeaderEpochs.future(request, timeout=VALIDATE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - as a failed fetch
            self._failed(address)
            return
        self._validating.add(address)
        call.add_done_callback(lambda done, a=address, s=sent: self._answers.put(("validated", a, s, done)))

    def _accept_validation(self, address: str, sent: dict[TopicPartition, tuple[int, int, int, int]], call) -> None:
        self._validating.discard(address)
        try:
            reply = call.result()
        except (grpc.RpcError, grpc.FutureCancelledError):
            self._failed(address)
            return
        with self.lock:
            for answer in reply.partitions:
                tp = TopicPartition(answer.topic, answer.partition)
                offset, generation, last_epoch, current = sent.get(tp, (-1, -1, NO_EPOCH, NO_EPOCH))
                if self._generations.get(tp) != generation or self._positions.get(tp) != offset:
                    continue
                if answer.error_code != common_pb2.ERROR_CODE_NONE:
                    self._refresh_by(time.monotonic())
                    self._backoff_until_s[tp] = time.monotonic() + self.retry_backoff_s
                    continue
                self._validated[tp] = current
                divergent = _divergent_offset(offset, last_epoch, answer.leader_epoch, answer.end_offset)
                if divergent is not None:
                    self._stopped.add(tp)
                    self._chunks.append(Chunk(tp, generation, b"", offset, -1, TRUNCATED,
                                              f"the leader's log (epoch {current}) ends epoch {last_epoch} at "
                                              f"{answer.end_offset}, below the fetch position {offset}",
                                              divergent_offset=divergent))
                    self.lock.notify_all()

    def _failed(self, address: str) -> None:
        """A call to `address` failed: it is suspect and not called again before `retry_backoff_s` has passed,
        and metadata is refreshed, at once unless a refresh was tried within that time. (Without the pause a
        consumer whose cluster had gone called it as fast as the calls failed, tens of thousands a second.)"""
        now_s = time.monotonic()
        self._suspect.add(address)
        self._address_backoff_until_s[address] = now_s + self.retry_backoff_s
        self.metadata.mark_unreachable(address)
        if now_s - self._metadata_tried_at_s >= self.retry_backoff_s:
            self._refresh()
        else:
            self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)

    def _refresh_by(self, due_s: float) -> None:
        self._metadata_due_s = min(self._metadata_due_s, due_s)

    def _refresh(self) -> None:
        self._metadata_tried_at_s = time.monotonic()
        self._metadata_due_s = self._metadata_tried_at_s + self.metadata_max_age_s
        topics = self.topics()
        if not topics:
            return
        try:
            self.metadata.refresh(topics)
        except Exception:  # noqa: BLE001 - tried again soon
            self._refresh_by(self._metadata_tried_at_s + self.retry_backoff_s)


def _divergent_offset(position: int, asked_epoch: int, found_epoch: int, end_offset: int) -> int | None:
    """Where the leader's log diverges from a fetch position reached in `asked_epoch`, or None when it does
    not (or cannot be told: the leader knows no epoch at or below the one asked about). Pure."""
    if found_epoch < 0 or end_offset < 0:
        return None
    if end_offset < position:
        return end_offset
    return None
