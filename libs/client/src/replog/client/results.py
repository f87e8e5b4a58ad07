"""What a send comes to: `RecordMetadata` when the record is written, else `ProduceError`; and the
light handle (`SendHandle`, one per record, sharing its batch's `BatchOutcome`) that `send` returns."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from replog.v1 import common_pb2

log = logging.getLogger(__name__)


class ClientError(Exception):
    """An error a broker answered (or the client met), with its replog error code (`code`)."""

    def __init__(self, code: int, message: str) -> None:
        name = common_pb2.ErrorCode.Name(code).removeprefix("ERROR_CODE_") if code in common_pb2.ErrorCode.values() \
            else str(code)
        super().__init__(f"{name}: {message}" if message else name)
        self.code = code


class ProduceError(ClientError):
    """A record the producer could not write (what its handle raises), or a producer that could not start."""


class GroupError(ClientError):
    """What a consumer in a group raises: no coordinator answering, a commit fenced by a newer generation,
    no committed offset where `auto_offset_reset` is "none"."""


class ConsumerError(ClientError):
    """What the Consumer raises: an offset out of range, no leader answering, a partition not assigned."""


class UnknownTopicError(ProduceError, ConsumerError):
    """A topic the cluster does not have (code UNKNOWN_TOPIC_OR_PARTITION): what `Producer.send` and
    the Consumer raise for it. Both a ProduceError and a ConsumerError, so either's handler catches it."""


class TruncationError(ConsumerError):
    """Records this consumer returned are no longer in the log: after an unclean leader election the
    new leader's log diverges below the consumer's position (KIP-320). `divergent_offsets` maps each
    such partition to the first offset at which the logs differ; the consumer raises it instead of
    moving there when its truncation policy is "raise". Code OFFSET_OUT_OF_RANGE, as Kafka's
    LogTruncationException is an OffsetOutOfRangeException."""

    def __init__(self, divergent_offsets: dict, message: str) -> None:
        super().__init__(common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE, message)
        self.divergent_offsets = dict(divergent_offsets)


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int


class BatchOutcome:
    """How one producer batch ended, shared by the handles of its records: set once, by the sender.

    Completion costs one Event per batch, not a Future per record; callbacks run on the
    sender's thread, after the batch's outcome is set."""

    __slots__ = ("topic", "partition", "base_offset", "error", "_event", "_callbacks", "_lock")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.error: BaseException | None = None
        self._event = threading.Event()
        self._callbacks: list[tuple[Callable[[SendHandle], None], SendHandle]] = []
        self._lock = threading.Lock()

    def finish(self, base_offset: int, error: BaseException | None) -> None:
        with self._lock:
            self.base_offset, self.error = base_offset, error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback, handle in callbacks:
            _run_callback(callback, handle)

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_s: float | None) -> None:
        if not self._event.wait(timeout_s):
            raise TimeoutError(f"no answer for {self.topic}-{self.partition} within {timeout_s} s")

    def on_finish(self, callback: Callable[[SendHandle], None], handle: SendHandle) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append((callback, handle))
                return
        _run_callback(callback, handle)


class SendHandle:
    """What `Producer.send` returns: one record's outcome, shaped like a concurrent.futures.Future
    (`result`, `exception`, `done`, `add_done_callback`) at a fraction of its cost per record."""

    __slots__ = ("_outcome", "_index")

    def __init__(self, outcome: BatchOutcome, index: int) -> None:
        self._outcome = outcome
        self._index = index

    def done(self) -> bool:
        return self._outcome.is_set()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """The record's RecordMetadata once written; raises its ProduceError, or TimeoutError."""
        outcome = self._outcome
        outcome.wait(timeout)
        if outcome.error is not None:
            raise outcome.error
        offset = outcome.base_offset + self._index if outcome.base_offset >= 0 else -1
        return RecordMetadata(outcome.topic, outcome.partition, offset)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._outcome.wait(timeout)
        return self._outcome.error

    def add_done_callback(self, callback: Callable[[SendHandle], None]) -> None:
        """`callback(handle)` once the record is answered (at once if it is): on the producer's
        sender thread, so it should be quick."""
        self._outcome.on_finish(callback, self)


def _run_callback(callback: Callable[[SendHandle], None], handle: SendHandle) -> None:
    try:
        callback(handle)
    except Exception:  # noqa: BLE001 - a user's callback must not stop the sender
        log.exception("a send callback raised")
