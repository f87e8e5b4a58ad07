"""The producer's sender thread: requests out to the leaders, answers back, retries, new leaders.

Each turn the sender takes the batches that may leave from the accumulator, stamps each once
with its producer id, epoch and base sequence (`_encode`, in the partition's send order), and
sends one ProduceRequest per leader broker over that broker's ProduceStream
(produce_stream.py), which the broker appends in the order sent. A request names a partition
at most once (`_one_per_partition`). Answers arrive on the streams' threads and come to this
thread through one queue (`_completions`), which also carries the wake-ups.

A batch that fails with a retriable error (not leader, timeout, broker gone, not enough
replicas) is retried with the same bytes and the same sequence after a metadata refresh, and
its partition recovers (accumulator.py). A batch the leader refused as out of order, or as
from an unknown producer, because an earlier one had not been appended is retried too. With idempotence the leader recognises
a batch it already has and answers with its original offset, so a retry never writes a
record twice. Which answers finish, retry or fail a batch is one pure rule (answer_rules.py), which
the broker simulation runs too; this module acts on its verdicts. `clock` (monotonic seconds) is the
only time the sender reads.

Following a new leader (Kafka's KIP-951 idea, with metadata as the source): the sender
refreshes metadata soon after a retriable error, then every `retry_backoff_ms` while a
partition recovers or a request has waited over `UNANSWERED_CHECK_S`, and every
`metadata_max_age_ms` in any case. A batch waiting out its backoff goes at once when
metadata names a leader newer than the one that failed it, and its backoff grows only with
failures at one leader. With idempotence, a request outstanding at a broker that metadata
says was replaced as a partition's leader (another broker, a newer leader epoch) is
abandoned: its stream is cancelled, and what was on it is retried like a lost request, same
bytes and sequence, in order, so the new leader appends it once or answers it as a
duplicate. A silent leader (paused, cut off) is thus left as soon as the cluster has
replaced it, not after the request timeout. Without idempotence a resend might write a batch
twice, so there the producer waits for the answer or the request timeout.

Client quotas (docs/quotas.md): an answer's `throttle_time_ms` says the producer's user went over its
produce quota on that broker. The sender then sends nothing more to that broker until the time has
passed: a request due meanwhile is *parked* and leaves, in order, when the throttle ends. Requests
already in flight when the throttle began are refused by the broker with THROTTLING_QUOTA_EXCEEDED,
nothing appended, and their batches are retried when the throttle ends, in order, with the same bytes
and sequences, as any retriable failure but with no backoff of their own.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from typing import Callable

from replog.client.accumulator import Accumulator, ProducerBatch
from replog.client.answer_rules import SEQUENCE_GAP, Verdict, decide_answer
from replog.client.metadata import MetadataCache
from replog.client.produce_stream import ProduceStream
from replog.client.results import ProduceError, RecordMetadata
from replog.v1 import common_pb2, log_pb2

log = logging.getLogger(__name__)

# A request unanswered this long (an acks=all write normally answers in milliseconds) makes the sender
# look at metadata every retry backoff, to see whether its leader was replaced.
UNANSWERED_CHECK_S = 1.0
# A stream's request unanswered this long past the request timeout (by which the broker answers an
# acks=all write) is given up: the broker stopped answering.
ANSWER_GRACE_S = 5.0
# The longest the loop sleeps with nothing due: it looks at its streams and metadata this often.
IDLE_WAIT_S = 0.05

_THROTTLED = object()  # a completion saying a broker throttles this producer: (_THROTTLED, address, until_s)


class Sender:
    def __init__(self, accumulator: Accumulator, metadata: MetadataCache, *, acks: int, idempotent: bool,
                 producer_id: int, producer_epoch: int, request_timeout_s: float, delivery_timeout_s: float,
                 retry_backoff_s: float, retry_backoff_max_s: float, metadata_max_age_s: float,
                 compression: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock`: monotonic seconds (a simulation passes its own)."""
        self._accumulator = accumulator
        self._clock = clock
        self.compression = compression  # the codec every batch is built with (replog.common.records)
        self.metadata = metadata
        self.acks = acks
        self.idempotent = idempotent
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.request_timeout_s = request_timeout_s
        self.delivery_timeout_s = delivery_timeout_s
        self.retry_backoff_s = retry_backoff_s
        self.retry_backoff_max_s = retry_backoff_max_s
        self.metadata_max_age_s = metadata_max_age_s
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._next_ordinal: dict[tuple[str, int], int] = {}
        self._streams: dict[str, ProduceStream] = {}
        self._topics: set[str] = set()  # the topics whose metadata it refreshes
        self._metadata_due_s = self._clock() + self.metadata_max_age_s  # next refresh
        self._metadata_tried_at_s = float("-inf")
        self._completions: queue.SimpleQueue = queue.SimpleQueue()  # C-level: no Python lock per put and get
        self._throttled_until_s: dict[str, float] = {}  # broker address -> when its throttle ends (monotonic)
        self._parked: dict[str, list[tuple[log_pb2.ProduceStreamRequest, list[ProducerBatch]]]] = {}  # in order
        self._thread = threading.Thread(target=self._run, name="producer-sender", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """From any thread: the sender re-plans at once instead of after its idle wait."""
        self._completions.put(None)

    def stop(self) -> None:
        """Once the accumulator is closed: wait for the thread to end, then close the streams."""
        self._thread.join(timeout=5)
        for stream in self._streams.values():
            stream.close()

    # --- the loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            wait_s = self._turn()
            if wait_s is None:
                return
            try:
                completion = self._completions.get(timeout=wait_s)
            except queue.Empty:
                continue
            self._take_completions(completion)

    def _turn(self) -> float | None:
        """Send what may leave, look at the streams and metadata; how long to wait for an answer before
        the next turn (None: the accumulator is closed with nothing left, the sender ends)."""
        drained = self._accumulator.drain()
        if drained is None:
            return None
        sendable, next_timer_s, troubled = drained
        if self._parked:
            next_timer_s = _earliest(next_timer_s, self._release_parked(self._clock()))
        if sendable:
            self._send(sendable)
        self._encode_waiting()
        now = self._clock()
        troubled = self._check_streams(now) or troubled
        if troubled:
            self._refresh_metadata_by(self._metadata_tried_at_s + self.retry_backoff_s)
        if now >= self._metadata_due_s:
            self._refresh_metadata(now)
        # Until the next answer, or the first timer's end: waiting `linger_s` there spun the thread
        # through a retry backoff whenever linger_s was 0.
        return IDLE_WAIT_S if next_timer_s is None else min(IDLE_WAIT_S, max(0.0, next_timer_s - now))

    def _take_completions(self, completion=None) -> None:
        """Complete `completion` (None: the first one queued) and those queued after it, in order, up to
        a wake-up or the queue's end."""
        if completion is None:
            completion = self._next_queued()
        while completion is not None:
            if completion[0] is _THROTTLED:
                self._throttled(*completion[1:])
            else:
                self._complete(*completion)
            completion = self._next_queued()

    def _next_queued(self):
        try:
            return self._completions.get_nowait()
        except queue.Empty:
            return None

    # --- following leaders -----------------------------------------------------------------------

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
        """Refresh the leaders of the topics sent to, then act on what changed."""
        self._metadata_tried_at_s = now
        self._metadata_due_s = now + self.metadata_max_age_s
        if not self._topics:
            return  # nothing sent yet (an empty list would ask for every topic)
        try:
            self.metadata.refresh(sorted(self._topics))
        except Exception:  # noqa: BLE001 - tried again when next due
            return
        if self._accumulator.release_backoffs(now, self._leader_is_newer):
            self.wake()
        if self.idempotent:
            for address, stream in list(self._streams.items()):
                waiting = [b for group in stream.outstanding() for b in group]
                if not stream.broken and any(self._leader_replaced(b, address) for b in waiting):
                    log.info("abandoning the requests outstanding at %s: a partition of theirs has a new leader",
                             address)
                    stream.cancel()  # what was on it comes back through _on_lost, to be retried in order

    def _leader_is_newer(self, batch: ProducerBatch) -> bool:
        """Metadata names a leader of the batch's partition newer than the one it last failed at."""
        leader = self.metadata.leader_address(batch.topic, batch.partition)
        return leader is not None and (batch.sent_to is None or leader[1] > batch.sent_to[1])

    def _leader_replaced(self, batch: ProducerBatch, address: str) -> bool:
        """Metadata says another broker than `address`, where the batch waits, leads its partition
        at a newer leader epoch than the batch was sent at."""
        leader = self.metadata.leader_address(batch.topic, batch.partition)
        return (leader is not None and batch.sent_to is not None and leader[0] != address
                and leader[1] > batch.sent_to[1])

    # --- requests out ----------------------------------------------------------------------------

    def _encode(self, batch: ProducerBatch) -> None:
        """Encode a batch once, giving it the partition's next sequence (in the partition's send
        order, so sequences reach the leader in order)."""
        if batch.encoded is not None:
            return
        key = (batch.topic, batch.partition)
        if self.idempotent:
            batch.base_sequence = self._next_sequence.get(key, 0)
            self._next_sequence[key] = (batch.base_sequence + batch.records.count) % (2**31)
        batch.ordinal = self._next_ordinal.get(key, 0)
        self._next_ordinal[key] = batch.ordinal + 1
        self._accumulator.track_unfinished(batch)
        batch.encoded = batch.records.build(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                                            base_sequence=batch.base_sequence, compression=self.compression)
        batch.deadline_s = self._clock() + self.delivery_timeout_s

    def _encode_waiting(self) -> None:
        """Encode batches that wait behind an in-flight request now, while the network works,
        so the next request leaves as soon as the previous one is answered."""
        for batch in self._accumulator.unencoded_ready():
            self._encode(batch)

    def _send(self, batches: list[ProducerBatch]) -> None:
        for batch in batches:
            self._encode(batch)
            self._topics.add(batch.topic)
        unknown = sorted({b.topic for b in batches if self.metadata.leader_address(b.topic, b.partition) is None})
        if unknown:
            self._metadata_tried_at_s = self._clock()
            try:
                self.metadata.refresh(unknown)
            except Exception:  # noqa: BLE001 - retried below
                pass
        by_leader: dict[str, list[ProducerBatch]] = {}
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

    def _send_group(self, address: str, group: list[ProducerBatch]) -> None:
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
        now_s = self._clock()
        if address in self._parked or self._throttled_until_s.get(address, 0.0) > now_s:
            self._parked.setdefault(address, []).append((message, group))  # after those parked before it
            return
        self._send_message(address, message, group, now_s)

    def _send_message(self, address: str, message: log_pb2.ProduceStreamRequest, group: list[ProducerBatch],
                      now_s: float) -> None:
        stream = self._streams.get(address)
        if stream is None or not stream.send(message, group, now_s):
            try:
                stream = self._streams[address] = self._open_stream(address)
            except Exception as exc:  # noqa: BLE001 - like a failed request: retried
                self._on_lost(group, str(exc))
                return
            if not stream.send(message, group, now_s):  # it failed at once (the broker is down)
                self._on_lost(group, "the produce stream failed as it opened")

    def _open_stream(self, address: str) -> ProduceStream:
        """A new ProduceStream to the broker at `address` (a simulation opens its own kind)."""
        return ProduceStream(self.metadata.channels.get(address), functools.partial(self._on_reply, address),
                             self._on_lost)

    # --- throttles (client quotas) ----------------------------------------------------------------

    def _throttled(self, address: str, until_s: float) -> None:
        if until_s > self._throttled_until_s.get(address, 0.0):
            self._throttled_until_s[address] = until_s

    def _release_parked(self, now_s: float) -> float | None:
        """Send, in order, the requests parked for brokers whose throttle has ended; when the next throttle
        of a broker with requests parked ends (None: none is left)."""
        next_s = None
        for address in list(self._parked):
            until_s = self._throttled_until_s.get(address, 0.0)
            if until_s > now_s:
                next_s = _earliest(next_s, until_s)
                continue
            for message, group in self._parked.pop(address):
                self._send_message(address, message, group, now_s)
        return next_s

    # --- answers in (the streams' threads hand them over; this thread completes them) -------------

    def _on_lost(self, group: list[ProducerBatch], why: str) -> None:
        for batch in group:
            self._completions.put((batch, common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE, why, -1))

    def _on_reply(self, address: str, group: list[ProducerBatch], answer: log_pb2.ProduceStreamResponse) -> None:
        if answer.error_code != common_pb2.ERROR_CODE_NONE:
            for batch in group:
                self._completions.put((batch, answer.error_code, answer.error_message, -1))
            return
        reply = answer.produce
        if reply.throttle_time_ms:  # before the batches' completions: a refused one is retried after it
            self._completions.put((_THROTTLED, address, self._clock() + reply.throttle_time_ms / 1000))
        if self.acks == 0 and not reply.partitions:  # an acks=0 answer lists partitions only when refused
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

    def _complete(self, batch: ProducerBatch, code: int, message: str, base_offset: int) -> None:
        """Act on a batch's answer as answer_rules.decide_answer says."""
        now = self._clock()
        verdict = decide_answer(
            code, idempotent=self.idempotent, deadline_passed=now >= batch.deadline_s,
            # An earlier batch not yet appended (it failed, or went to another leader) explains a gap.
            earlier_unfinished=code in SEQUENCE_GAP and self._accumulator.has_earlier_unfinished(batch))
        if verdict is Verdict.RETRY_AFTER_THROTTLE:
            # Refused unappended while its broker throttled this producer: again once the throttle ends.
            batch.attempts += 1
            batch.retry_at_s = self._throttled_until_s.get(batch.sent_to[0], 0.0) if batch.sent_to else 0.0
            self._accumulator.retry(batch)
            return
        if verdict is Verdict.RETRY:
            batch.attempts += 1
            batch.failures_here += 1
            batch.retry_at_s = now + min(self.retry_backoff_s * batch.failures_here, self.retry_backoff_max_s)
            if self._leader_is_newer(batch):
                batch.retry_at_s = 0.0  # metadata already names its new leader: no backoff
            if code == common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE and batch.sent_to is not None:
                self.metadata.mark_unreachable(batch.sent_to[0])
            # Soon, and once for the errors that come together (the sender refreshes before sending again).
            self._refresh_metadata_by(self._metadata_tried_at_s + self.retry_backoff_s)
            self._accumulator.retry(batch)
            return
        if verdict is Verdict.DELIVERED:
            batch.outcome.finish(base_offset, None)
            for future, i in batch.futures:
                offset = base_offset + i if base_offset >= 0 else -1
                future.set_result(RecordMetadata(batch.topic, batch.partition, offset))
        else:
            error = ProduceError(code, message)
            batch.outcome.finish(-1, error)
            for future, _ in batch.futures:
                future.set_exception(error)
        self._accumulator.done(batch)


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _one_per_partition(batches: list[ProducerBatch]) -> list[list[ProducerBatch]]:
    """Requests for these batches, in order: a broker refuses a request naming a partition twice, so a
    partition's second batch goes in the second request, and so on (the stream keeps them in order)."""
    requests: list[list[ProducerBatch]] = []
    seen: dict[tuple[str, int], int] = {}
    for batch in batches:
        key = (batch.topic, batch.partition)
        layer = seen.get(key, 0)
        seen[key] = layer + 1
        if layer == len(requests):
            requests.append([])
        requests[layer].append(batch)
    return requests
