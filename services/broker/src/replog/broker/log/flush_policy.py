"""When a partition log fsyncs (by count / interval, or per append).

Pure: the log tells it about appends and flushes with the monotonic time,
and asks whether a flush is due. With neither limit set, data reaches disk
only on roll, truncation, close, an explicit `flush()` or `fsync=True`
(durability then comes from replication, as in Kafka's default).
"""

from __future__ import annotations


class FlushPolicy:
    def __init__(self, flush_messages: int | None, flush_interval_ms: int | None, now_ms: int) -> None:
        self._flush_messages = flush_messages
        self._flush_interval_ms = flush_interval_ms
        self._unflushed_records = 0
        self._last_flush_ms = now_ms

    def reconfigure(self, flush_messages: int | None, flush_interval_ms: int | None) -> None:
        """New limits (a topic's config changed); what is unflushed so far counts against them."""
        self._flush_messages = flush_messages
        self._flush_interval_ms = flush_interval_ms

    @property
    def unflushed_records(self) -> int:
        return self._unflushed_records

    def on_append(self, record_count: int) -> None:
        self._unflushed_records += record_count

    def on_flush(self, now_ms: int) -> None:
        self._unflushed_records = 0
        self._last_flush_ms = now_ms

    def is_due(self, now_ms: int) -> bool:
        if self._unflushed_records == 0:
            return False
        if self._flush_messages is not None and self._unflushed_records >= self._flush_messages:
            return True
        return self._flush_interval_ms is not None and now_ms - self._last_flush_ms >= self._flush_interval_ms
