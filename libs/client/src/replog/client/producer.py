"""Producer: batching, leader discovery, retries and idempotence (KIP-98).

`send()` appends a record to its partition's open batch and returns a Future
(`send_batch()` appends many with one Future). One sender thread closes batches
when full or after `linger_ms` (a lingered batch keeps filling while its
partition cannot send: `max_in_flight` requests out, or a retry pending),
stamps each once with its producer id, epoch and base sequence (the records'
bytes are written as they join the batch, replog.common.records.BatchBuilder,
so the sender only adds the header and CRC when the batch may leave), and
sends one ProduceRequest per leader broker over that broker's ProduceStream
(produce_stream.py), which the broker appends in the order sent.

Up to `max_in_flight` batches per partition are in flight (Kafka's
max.in.flight.requests.per.connection, 5 by default; at most 5 with
idempotence, the batches a partition remembers per producer), so a batch need
not wait for the whole round trip of the one before it. A batch that fails
with a retriable error (not leader, timeout, broker gone, not enough replicas)
is retried with the same bytes and the same sequence after a metadata refresh.
Its partition then *recovers*: nothing new is sent until every batch of it in
flight has answered, and the batches to retry go one at a time, in sequence
order; a later batch that the leader refused as out of order because an
earlier one had not been appended is one of them. Once none is in flight and
none waits to be retried, the partition sends as before, its open batch
included. With idempotence the leader recognises a batch it already has and
answers with its original offset, so a retry never writes a record twice.

Following a new leader (Kafka's KIP-951 idea, with metadata as the source):
the sender refreshes metadata soon after a retriable error, then every
`retry_backoff_ms` while a partition recovers or a request has waited over
`UNANSWERED_CHECK_S`, and every `metadata_max_age_ms` in any case. A batch
waiting out its backoff goes at once when metadata names a leader newer than
the one that failed it, and its backoff grows only with failures at one
leader. With idempotence, a request outstanding at a broker that metadata
says was replaced as a partition's leader (another broker, a newer leader
epoch) is abandoned: its stream is cancelled, and what was on it is retried
like a lost request, same bytes and sequence, in order, so the new leader
appends it once or answers it as a duplicate. A silent leader (paused, cut
off) is thus left as soon as the cluster has replaced it, not after the
request timeout. Without idempotence a resend might write a batch twice, so
there the producer waits for the answer or the request timeout.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, field

from replog.common import records as rec
from replog.client.metadata import MetadataCache
from replog.client.produce_stream import ProduceStream
from replog.v1 import common_pb2, log_pb2

log = logging.getLogger(__name__)

MAX_IN_FLIGHT_IDEMPOTENT = 5  # the broker's producer state keeps a producer's last 5 batches (BATCHES_KEPT)
MAX_IN_FLIGHT = 100
# A request unanswered this long (an acks=all write normally answers in milliseconds) makes the sender
# look at metadata every retry backoff, to see whether its leader was replaced.
UNANSWERED_CHECK_S = 1.0
# A stream's request unanswered this long past the request timeout (by which the broker answers an
# acks=all write) is given up: the broker stopped answering.
ANSWER_GRACE_S = 5.0

RETRIABLE = {
    common_pb2.ERROR_CODE_NOT_LEADER,
    common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
    common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
    common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS,
    common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    common_pb2.ERROR_CODE_REPLICA_NOT_AVAILABLE,
    common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,  # may be metadata lag right after creation
    common_pb2.ERROR_CODE_FENCED_LEADER_EPOCH,
    common_pb2.ERROR_CODE_UNKNOWN_LEADER_EPOCH,
    common_pb2.ERROR_CODE_BROKER_SHUTTING_DOWN,
    common_pb2.ERROR_CODE_STORAGE_ERROR,
}


class ProduceError(Exception):
    def __init__(self, code: int, message: str) -> None:
        name = common_pb2.ErrorCode.Name(code).removeprefix("ERROR_CODE_") if code in common_pb2.ErrorCode.values() \
            else str(code)
        super().__init__(f"{name}: {message}" if message else name)
        self.code = code


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int


@dataclass
class _Batch:
    topic: str
    partition: int
    records: rec.BatchBuilder = field(default_factory=rec.BatchBuilder)  # encoded as they join; .count
    futures: list = field(default_factory=list)       # (future, index of its first record in the batch)
    size_bytes: int = 0
    created_s: float = field(default_factory=time.monotonic)
    encoded: bytes | None = None
    base_sequence: int = -1
    ordinal: int = -1  # the partition's batches in send order, from 0 (set with the sequence)
    attempts: int = 0
    deadline_s: float = 0.0
    retry_at_s: float = 0.0
    sent_to: tuple[str, int] | None = None  # (address, leader epoch) of the leader last sent to
    failures_here: int = 0  # retriable failures at sent_to in a row: what the backoff grows with


class Producer:
    def __init__(
        self,
        bootstrap: list[str],
        *,
        acks: int = -1,
        idempotent: bool = True,
        linger_ms: int = 2,
        batch_records_max: int = 2000,
        batch_bytes_max: int = 1024 * 1024,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        buffered_records_max: int = 1_000_000,
        max_in_flight: int = 5,
        metadata_max_age_ms: int = 300_000,
        metadata_timeout_ms: int = 1000,
    ) -> None:
        if acks not in (0, 1, -1):
            raise ValueError(f"acks must be 0, 1 or -1 (all), not {acks}")
        if idempotent and acks != -1:
            raise ValueError("an idempotent producer needs acks=-1 (all)")
        if not 1 <= max_in_flight <= (MAX_IN_FLIGHT_IDEMPOTENT if idempotent else MAX_IN_FLIGHT):
            raise ValueError(f"max_in_flight must be 1 to {MAX_IN_FLIGHT_IDEMPOTENT} with idempotence (a broker "
                             f"remembers a producer's last {MAX_IN_FLIGHT_IDEMPOTENT} batches per partition) or 1 "
                             f"to {MAX_IN_FLIGHT} without, not {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.metadata = MetadataCache(bootstrap, timeout_s=metadata_timeout_ms / 1000)
        self.acks = acks
        self.idempotent = idempotent
        self.linger_s = linger_ms / 1000
        self.batch_records_max = batch_records_max
        self.batch_bytes_max = batch_bytes_max
        self.request_timeout_s = request_timeout_ms / 1000
        self.delivery_timeout_s = delivery_timeout_ms / 1000
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.retry_backoff_max_s = max(retry_backoff_max_ms, retry_backoff_ms) / 1000
        self.metadata_max_age_s = metadata_max_age_ms / 1000
        self.producer_id, self.producer_epoch = -1, -1
        self._lock = threading.Condition()
        self._open: dict[tuple[str, int], _Batch] = {}
        self._ready: collections.deque[_Batch] = collections.deque()
        self._in_flight: dict[tuple[str, int], int] = {}  # batches in flight per partition
        self._recovering: set[tuple[str, int]] = set()  # partitions retrying: one batch at a time, in order
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._next_ordinal: dict[tuple[str, int], int] = {}
        self._unfinished: dict[tuple[str, int], set[int]] = {}  # ordinals encoded and not yet answered for good
        self._streams: dict[str, ProduceStream] = {}  # sender thread only
        self._topics: set[str] = set()  # sender thread only: the topics whose metadata it refreshes
        self._metadata_due_s = time.monotonic() + self.metadata_max_age_s  # sender thread only: next refresh
        self._metadata_tried_at_s = float("-inf")  # sender thread only
        self._completions: queue.SimpleQueue = queue.SimpleQueue()  # C-level: no Python lock per put and get
        self._buffered = 0
        self._buffered_max = buffered_records_max
        self._round_robin = 0
        self._closed = False
        if idempotent:
            self._init_producer_id()
        self._thread = threading.Thread(target=self._run, name="producer-sender", daemon=True)
        self._thread.start()

    # --- API -------------------------------------------------------------------------------

    def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int | None = None,
             timestamp_ms: int | None = None) -> Future:
        if partition is None:
            count = self.metadata.partition_count(topic)
            if key is not None:
                partition = zlib.crc32(key) % count
            else:
                partition = self._round_robin % count
                self._round_robin += 1
        future: Future = Future()
        record = (key, value, timestamp_ms if timestamp_ms is not None else int(time.time() * 1000))
        size = len(value) + (len(key) if key else 0) + 24
        with self._lock:
            if self._closed:
                raise RuntimeError("the producer is closed")
            while self._buffered >= self._buffered_max:
                self._lock.wait()
            batch = self._open.get((topic, partition))
            wake = batch is None and self._may_send_locked((topic, partition))
            if batch is None:
                batch = self._open[(topic, partition)] = _Batch(topic, partition)
            batch.futures.append((future, batch.records.count))
            batch.records.add_many((record,))
            batch.size_bytes += size
            self._buffered += 1
            if batch.records.count >= self.batch_records_max or batch.size_bytes >= self.batch_bytes_max:
                self._ready.append(self._open.pop((topic, partition)))
                self._lock.notify_all()
                wake = True
        if wake:
            self._wake_sender()
        return future

    def send_batch(self, topic: str, values: list[bytes], *, partition: int, key: bytes | None = None,
                   timestamp_ms: int | None = None) -> Future:
        """Send many records with one future, which gives the first record's RecordMetadata.

        For callers that already hold many records (bulk loads, benchmarks): the records
        join the partition's open batch like `send` would add them (so small calls made
        while a request is in flight still travel together), minus one future per record.
        A call that would push the open batch past `batch_bytes_max` starts a new batch;
        one call must fit in `batch_bytes_max` itself (a broker refuses larger batches).
        """
        if not values:
            raise ValueError("send_batch needs at least one record")
        stamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        key_bytes = len(key) if key else 0
        size = sum(len(v) for v in values) + (key_bytes + 24) * len(values)
        if size > self.batch_bytes_max:
            raise ValueError(f"{len(values)} records take about {size} bytes, more than batch_bytes_max "
                             f"{self.batch_bytes_max}; split the call")
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the producer is closed")
            while self._buffered and self._buffered + len(values) > self._buffered_max:
                self._lock.wait()
            batch = self._open.get((topic, partition))
            wake = batch is None and self._may_send_locked((topic, partition))
            if batch is not None and batch.size_bytes + size > self.batch_bytes_max:
                self._ready.append(self._open.pop((topic, partition)))
                batch = None
                wake = True
            if batch is None:
                batch = self._open[(topic, partition)] = _Batch(topic, partition)
            batch.futures.append((future, batch.records.count))
            batch.records.add_many([(key, value, stamp) for value in values])
            batch.size_bytes += size
            self._buffered += len(values)
            if batch.records.count >= self.batch_records_max or batch.size_bytes >= self.batch_bytes_max:
                self._ready.append(self._open.pop((topic, partition)))
                self._lock.notify_all()
                wake = True
        if wake:
            self._wake_sender()  # joining an open batch needs no wake-up: its linger clock already runs
        return future

    def _may_send_locked(self, key: tuple[str, int]) -> bool:
        """Whether a batch this partition opens now needs the sender woken to start its linger
        clock (under the lock). Not while the partition has all the requests out it may: the
        sender looks at its open batch again when an answer comes, and with one request in
        flight that saves a wake-up of the sender per request."""
        return self._in_flight.get(key, 0) < self.max_in_flight

    def _wake_sender(self) -> None:
        self._completions.put(None)  # the sender re-plans at once instead of after its idle wait

    def flush(self, timeout_s: float | None = None) -> None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            self._ready.extend(self._open.values())
            self._open.clear()
            self._lock.notify_all()
            self._wake_sender()
            while self._buffered > 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"{self._buffered} record(s) not delivered within {timeout_s} s")
                self._lock.wait(remaining if remaining is not None else 0.5)

    def close(self, timeout_s: float | None = None) -> None:
        """Deliver what is buffered (up to `timeout_s`, default the delivery timeout), then stop."""
        try:
            self.flush(self.delivery_timeout_s if timeout_s is None else timeout_s)
        finally:
            with self._lock:
                self._closed = True
                self._lock.notify_all()
            self._thread.join(timeout=5)
            for stream in self._streams.values():
                stream.close()
            self.metadata.close()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- sender thread ---------------------------------------------------------------------------

    def _init_producer_id(self) -> None:
        deadline = time.monotonic() + self.request_timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                self.metadata.refresh()
                stub = self.metadata.stub(self.metadata.any_broker())
                reply = stub.InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                                            timeout=self.request_timeout_s)
                if reply.error_code == common_pb2.ERROR_CODE_NONE:
                    self.producer_id, self.producer_epoch = reply.producer_id, reply.producer_epoch
                    return
                last = reply.error_message
            except Exception as exc:  # noqa: BLE001 - retried until the deadline
                last = str(exc)
            time.sleep(self.retry_backoff_s)
        raise ProduceError(common_pb2.ERROR_CODE_REQUEST_TIMED_OUT, f"could not get a producer id: {last}")

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed and not self._ready and not self._open and not self._in_flight:
                    return
                now = time.monotonic()
                self._end_recoveries_locked()
                troubled = bool(self._recovering)
                # A lingered batch leaves only when its partition can send: while it has all
                # the requests in flight it may (or a full batch waits) it keeps filling, as
                # Kafka's accumulator does, instead of splitting into one small request per linger.
                waiting_keys = {key for key, n in self._in_flight.items() if n >= self.max_in_flight}
                waiting_keys |= self._recovering
                waiting_keys |= {(b.topic, b.partition) for b in self._ready}
                lingering = False  # an open batch that may leave once its linger ends
                for key, batch in list(self._open.items()):
                    if key in waiting_keys:
                        continue
                    if now - batch.created_s >= self.linger_s:
                        self._ready.append(self._open.pop(key))
                    else:
                        lingering = True
                sendable = []
                waiting = collections.deque()
                # A partition's batches leave in order: one held back (its partition has
                # all it may in flight, or it backs off before a retry) holds back every
                # later one, else a later sequence would reach the leader first.
                blocked: set[tuple[str, int]] = set()
                while self._ready:
                    batch = self._ready.popleft()
                    key = (batch.topic, batch.partition)
                    in_flight = self._in_flight.get(key, 0)
                    limit = 1 if key in self._recovering else self.max_in_flight
                    if key in blocked or in_flight >= limit or batch.retry_at_s > now:
                        waiting.append(batch)
                        blocked.add(key)
                    else:
                        self._in_flight[key] = in_flight + 1
                        sendable.append(batch)
                self._ready = waiting
                # A batch held back by a request in flight waits for its completion, not for a timer.
                timed = lingering or any(b.retry_at_s > now for b in waiting)
            if sendable:
                self._send(sendable)
            self._encode_waiting()
            now = time.monotonic()
            troubled = self._check_streams(now) or troubled
            if troubled:
                self._refresh_metadata_by(self._metadata_tried_at_s + self.retry_backoff_s)
            if now >= self._metadata_due_s:
                self._refresh_metadata(now)
            try:
                completion = self._completions.get(timeout=self.linger_s if timed else 0.05)
            except queue.Empty:
                continue
            while completion is not None:
                self._complete(*completion)
                try:
                    completion = self._completions.get_nowait()
                except queue.Empty:
                    completion = None

    def _end_recoveries_locked(self) -> None:
        """A partition has recovered once none of its batches is in flight and none waits to be
        retried (under the lock): from then on it sends as before, its open batch included."""
        for key in [k for k in self._recovering if k not in self._in_flight]:
            if not any(b.attempts and (b.topic, b.partition) == key for b in self._ready):
                self._recovering.discard(key)

    def _check_streams(self, now: float) -> bool:
        """Give up a stream whose oldest request waited past its answer timeout; whether any other
        has a request unanswered for over UNANSWERED_CHECK_S."""
        slow = False
        for address, stream in list(self._streams.items()):
            if stream.broken:
                continue
            waited_s = stream.unanswered_s(now)
            if waited_s > self.request_timeout_s + ANSWER_GRACE_S:
                log.warning("broker %s left a produce request unanswered for %.1f s; reopening the stream",
                            address, waited_s)
                stream.cancel()
            elif waited_s > UNANSWERED_CHECK_S:
                slow = True
        return slow

    def _refresh_metadata_by(self, due_s: float) -> None:
        self._metadata_due_s = min(self._metadata_due_s, due_s)

    def _refresh_metadata(self, now: float) -> None:
        """Refresh the leaders of the topics sent to (sender thread), then act on what changed."""
        self._metadata_tried_at_s = now
        self._metadata_due_s = now + self.metadata_max_age_s
        if not self._topics:
            return  # nothing sent yet (an empty list would ask for every topic)
        try:
            self.metadata.refresh(sorted(self._topics))
        except Exception:  # noqa: BLE001 - tried again when next due
            return
        with self._lock:
            released = False
            if self._recovering:
                for batch in self._ready:
                    if batch.retry_at_s > now and self._leader_is_newer(batch):
                        batch.retry_at_s = 0.0  # a new leader: no need to wait out the old one's backoff
                        released = True
        if released:
            self._wake_sender()
        if self.idempotent:
            for address, stream in list(self._streams.items()):
                waiting = [b for group in stream.outstanding() for b in group]
                if not stream.broken and any(self._leader_replaced(b, address) for b in waiting):
                    log.info("abandoning the requests outstanding at %s: a partition of theirs has a new leader",
                             address)
                    stream.cancel()  # what was on it comes back through _on_lost, to be retried in order

    def _leader_is_newer(self, batch: _Batch) -> bool:
        """Metadata names a leader of the batch's partition newer than the one it last failed at."""
        leader = self.metadata.leader_address(batch.topic, batch.partition)
        return leader is not None and (batch.sent_to is None or leader[1] > batch.sent_to[1])

    def _leader_replaced(self, batch: _Batch, address: str) -> bool:
        """Metadata says another broker than `address`, where the batch waits, leads its partition
        at a newer leader epoch than the batch was sent at."""
        leader = self.metadata.leader_address(batch.topic, batch.partition)
        return (leader is not None and batch.sent_to is not None and leader[0] != address
                and leader[1] > batch.sent_to[1])

    def _encode(self, batch: _Batch) -> None:
        """Encode a batch once, giving it the partition's next sequence (sender thread only,
        in the partition's send order, so sequences reach the leader in order)."""
        if batch.encoded is not None:
            return
        key = (batch.topic, batch.partition)
        if self.idempotent:
            batch.base_sequence = self._next_sequence.get(key, 0)
            self._next_sequence[key] = (batch.base_sequence + batch.records.count) % (2**31)
        batch.ordinal = self._next_ordinal.get(key, 0)
        self._next_ordinal[key] = batch.ordinal + 1
        with self._lock:
            self._unfinished.setdefault(key, set()).add(batch.ordinal)
        batch.encoded = batch.records.build(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                                            base_sequence=batch.base_sequence)
        batch.deadline_s = time.monotonic() + self.delivery_timeout_s

    def _encode_waiting(self) -> None:
        """Encode batches that wait behind an in-flight request now, while the network works,
        so the next request leaves as soon as the previous one is answered."""
        with self._lock:
            waiting = [b for b in self._ready if b.encoded is None]
        for batch in waiting:
            self._encode(batch)

    def _send(self, batches: list[_Batch]) -> None:
        for batch in batches:
            self._encode(batch)
            self._topics.add(batch.topic)
        unknown = sorted({b.topic for b in batches if self.metadata.leader_address(b.topic, b.partition) is None})
        if unknown:
            self._metadata_tried_at_s = time.monotonic()
            try:
                self.metadata.refresh(unknown)
            except Exception:  # noqa: BLE001 - retried below
                pass
        by_leader: dict[str, list[_Batch]] = {}
        for batch in batches:
            leader = self.metadata.leader_address(batch.topic, batch.partition)
            if leader != batch.sent_to:
                batch.sent_to, batch.failures_here = leader, 0
            if leader is None:
                self._completions.put((batch, common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE, "no leader known", -1))
                continue
            by_leader.setdefault(leader[0], []).append(batch)
        for address, batches_there in by_leader.items():
            for group in _one_per_partition(batches_there):
                self._send_group(address, group)

    def _send_group(self, address: str, group: list[_Batch]) -> None:
        """One request (a partition at most once in it) on the broker's stream, opened if need be."""
        # Filled in place: a ProduceRequest built apart and then set as `produce` would be copied,
        # record batches and all.
        message = log_pb2.ProduceStreamRequest()
        request = message.produce
        request.acks = self.acks
        request.timeout_ms = int(self.request_timeout_s * 1000)
        add_partition = request.partitions.add
        for b in group:
            add_partition(topic=b.topic, partition=b.partition, record_batch=b.encoded)
        now_s = time.monotonic()
        stream = self._streams.get(address)
        if stream is None or not stream.send(message, group, now_s):
            try:
                stream = self._streams[address] = ProduceStream(self.metadata.channels.get(address), self._on_reply,
                                                                self._on_lost)
            except Exception as exc:  # noqa: BLE001 - like a failed request: retried
                self._on_lost(group, str(exc))
                return
            if not stream.send(message, group, now_s):  # it failed at once (the broker is down)
                self._on_lost(group, "the produce stream failed as it opened")

    def _on_lost(self, group: list[_Batch], why: str) -> None:
        for batch in group:
            self._completions.put((batch, common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE, why, -1))

    def _on_reply(self, group: list[_Batch], answer: log_pb2.ProduceStreamResponse) -> None:
        if answer.error_code != common_pb2.ERROR_CODE_NONE:
            for batch in group:
                self._completions.put((batch, answer.error_code, answer.error_message, -1))
            return
        reply = answer.produce
        if self.acks == 0:
            for batch in group:
                self._completions.put((batch, common_pb2.ERROR_CODE_NONE, "", -1))
            return
        answers = {(p.topic, p.partition): p for p in reply.partitions}
        for batch in group:
            answer = answers.get((batch.topic, batch.partition))
            if answer is None:
                self._completions.put((batch, common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR, "no answer", -1))
            else:
                self._completions.put((batch, answer.error_code, answer.error_message, answer.base_offset))

    def _complete(self, batch: _Batch, code: int, message: str, base_offset: int) -> None:
        key = (batch.topic, batch.partition)
        retry = code in RETRIABLE or code == common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE
        if code == common_pb2.ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER:
            with self._lock:
                # An earlier batch of the partition not yet appended (it failed, or went to
                # another leader) explains the gap: retry after it. Else the gap is real.
                retry = min(self._unfinished.get(key, {batch.ordinal})) < batch.ordinal
        if code in (common_pb2.ERROR_CODE_NONE, common_pb2.ERROR_CODE_DUPLICATE_SEQUENCE_NUMBER):
            for future, i in batch.futures:
                offset = base_offset + i if base_offset >= 0 else -1
                future.set_result(RecordMetadata(batch.topic, batch.partition, offset))
        elif retry and time.monotonic() < batch.deadline_s:
            batch.attempts += 1
            batch.failures_here += 1
            batch.retry_at_s = time.monotonic() + min(self.retry_backoff_s * batch.failures_here,
                                                      self.retry_backoff_max_s)
            if self._leader_is_newer(batch):
                batch.retry_at_s = 0.0  # metadata already names its new leader: no backoff
            if code == common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE and batch.sent_to is not None:
                self.metadata.mark_unreachable(batch.sent_to[0])
            # Soon, and once for the errors that come together (the sender refreshes before sending again).
            self._refresh_metadata_by(self._metadata_tried_at_s + self.retry_backoff_s)
            with self._lock:
                self._landed(key)
                self._recovering.add(key)
                self._requeue(batch)
                self._lock.notify_all()
            return
        else:
            error = ProduceError(code, message)
            for future, _ in batch.futures:
                future.set_exception(error)
        with self._lock:
            self._landed(key)
            unfinished = self._unfinished.get(key)
            if unfinished is not None:
                unfinished.discard(batch.ordinal)
            self._buffered -= batch.records.count
            self._lock.notify_all()

    def _landed(self, key: tuple[str, int]) -> None:
        """A request of this partition is no longer in flight (under the lock)."""
        left = self._in_flight.get(key, 0) - 1
        if left > 0:
            self._in_flight[key] = left
        else:
            self._in_flight.pop(key, None)

    def _requeue(self, batch: _Batch) -> None:
        """Put a batch to retry among the ready ones, in its partition's order (under the lock)."""
        key = (batch.topic, batch.partition)
        after = None  # index of the partition's last ready batch that goes before this one
        for index, other in enumerate(self._ready):
            if (other.topic, other.partition) == key:
                if other.ordinal < 0 or other.ordinal > batch.ordinal:  # < 0: not encoded yet, so later
                    self._ready.insert(index, batch)
                    return
                after = index
        if after is None:
            self._ready.appendleft(batch)
        else:
            self._ready.insert(after + 1, batch)


def _one_per_partition(batches: list[_Batch]) -> list[list[_Batch]]:
    """Requests for these batches, in order: a broker refuses a request naming a partition twice, so a
    partition's second batch goes in the second request, and so on (the stream keeps them in order)."""
    requests: list[list[_Batch]] = []
    seen: dict[tuple[str, int], int] = {}
    for batch in batches:
        key = (batch.topic, batch.partition)
        layer = seen.get(key, 0)
        seen[key] = layer + 1
        if layer == len(requests):
            requests.append([])
        requests[layer].append(batch)
    return requests
