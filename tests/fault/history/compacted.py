"""Keyed writes to a compacted topic, recorded as a History, and the logs the checker judges them
against (`checker.check_compacted`).

A record's value is `record_value` of its send followed by `PAD` bytes, so a test controls its
size (how fast segments roll) while the checker still recognises every copy of it; a tombstone's
value is None. One partition, one producer: the fault tests of compaction write through one
idempotent producer throughout.
"""

from __future__ import annotations

import threading
import time

from replog.client import Consumer, Producer

from . import checker
from .checker import KeyedLog
from .history import Fail, History, Indeterminate, Invoke, Ok, record_value

PAD = b"."


class KeyedSends:
    def __init__(self, history: History, producer: Producer, topic: str, producer_id: int = 0) -> None:
        self.history, self.producer, self.topic, self.producer_id = history, producer, topic, producer_id
        self._seq = 0
        self._pending: dict[int, object] = {}  # seq -> handle, until its answer is recorded
        self._lock = threading.Lock()

    def send(self, key: bytes, *, tombstone: bool = False, pad_bytes: int = 0):
        """Send one record of `key` to partition 0 (a tombstone: value None): its value and the producer's handle."""
        seq, self._seq = self._seq, self._seq + 1
        value = None if tombstone else record_value(self.producer_id, seq) + PAD * pad_bytes
        self.history.add(Invoke(time.monotonic(), self.producer_id, seq, self.topic, 0, key, tombstone))
        handle = self.producer.send(self.topic, value, key=key, partition=0)
        with self._lock:
            self._pending[seq] = handle
        handle.add_done_callback(lambda h, seq=seq: self._answered(seq, h))
        return value, handle

    def _answered(self, seq: int, handle) -> None:
        with self._lock:  # once: here or in `close`, whichever comes first
            if self._pending.pop(seq, None) is None:
                return
        self._record(seq, handle)

    def _record(self, seq: int, handle) -> None:
        now = time.monotonic()
        if not handle.done():
            self.history.add(Indeterminate(now, self.producer_id, seq))
        elif (error := handle.exception()) is not None:
            self.history.add(Fail(now, self.producer_id, seq, str(error)))
        else:
            self.history.add(Ok(now, self.producer_id, seq, handle.result().offset))

    def close(self) -> None:
        """Record every answer not recorded yet (a handle is done before its callbacks ran), and every
        send still unanswered as indeterminate: after the producer flushed or closed."""
        with self._lock:
            left, self._pending = self._pending, {}
        for seq, handle in sorted(left.items()):
            self._record(seq, handle)


def keyed_log(records) -> KeyedLog:
    """offset -> (key, value without its padding) of records read by a consumer or from a replica's files."""
    return {r.offset: (r.key, None if r.value is None else r.value.rstrip(PAD)) for r in records}


def read_to_end(bootstrap: list[str], topic: str, log_end_offset: int) -> list:
    """Partition 0's records up to `log_end_offset`, read by a fresh consumer from offset 0."""
    records = []
    if log_end_offset == 0:
        return records
    with Consumer(bootstrap, topic, start=0) as consumer:
        for record in consumer:
            records.append(record)
            if record.offset >= log_end_offset - 1:
                break
    return records


def judge(events: list, topic: str, delete_retention_ms: int, reads: dict[str, tuple[KeyedLog, float]],
          replicas: dict[int, KeyedLog]) -> list[str]:
    """Every violation the compaction-aware checker finds in `reads` (what was read, by a consumer or
    from one replica's files -> (its records, when it was read)) and among the replicas' files, each
    named by its read: empty when the history passes. Also fails when nothing was acknowledged."""
    out = []
    for name, (log, read_at_s) in reads.items():
        report = checker.check_compacted(events, {(topic, 0): log},
                                         checker.Compaction(delete_retention_ms / 1000, read_at_s))
        if report.acknowledged == 0:
            out.append(f"{name}: the history holds no acknowledged write")
        out += [f"{name}: {v}" for v in report.violations]
    out += [str(v) for v in checker.check_compacted_replicas((topic, 0), replicas)]
    return out
