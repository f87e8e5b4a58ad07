"""The broker's log cleaner: one thread compacting the hosted replicas of topics with cleanup.policy=compact.

Theory of operation (log/compaction.py decides, log/cleaner.py does one pass; Kafka's LogCleaner):

Each round looks at every hosted, usable replica whose log compacts, leaders
and followers alike (each replica cleans its own copy, below its own HW), and
weighs its cleanable segments: the dirtiest log that is due (dirty ratio at
least min.cleanable.dirty.ratio, or dirty records older than
max.compaction.lag.ms, or a tombstone in its clean part older than
delete.retention.ms, which a pass over the clean part alone removes) gets
one pass; with none due the thread waits
`backoff_ms`. Where a log's dirty part starts is kept per log in memory: a
restarted broker counts a log as dirty from its start, and its first pass
cleans it all again (which changes nothing already clean). A pass takes the
replica's lock only for its snapshot and each swap (`HostedPartition.run`),
and is throttled to `bytes_per_second` read plus written. An error in one log
is logged and the log is left for `backoff_ms`; the thread goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.log.cleaner import CleaningStopped, PassResult, Throttle, clean_log
from replog.broker.log.compaction import dirty_ratio, is_due
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common.clock import Clock

log = logging.getLogger(__name__)


class LogCleaner:
    def __init__(self, hosted: Callable[[], list[HostedPartition]], clock: Clock, *, keys_max: int,
                 bytes_per_second: int, backoff_ms: int, metrics: BrokerMetrics | None = None) -> None:
        assert keys_max > 0 and backoff_ms > 0 and bytes_per_second >= 0
        self._hosted = hosted
        self._clock = clock
        self._keys_max = keys_max
        self._bytes_per_second = bytes_per_second
        self._backoff_ms = backoff_ms
        self._metrics = metrics
        self._first_dirty: dict[int, int] = {}  # id(log) -> where its dirty part starts
        self._resting_until_ms: dict[int, int] = {}  # id(log) -> no pass before (after an error)
        self._oldest_tombstone_ms: dict[int, int] = {}  # id(log) -> its clean part's oldest tombstone
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-cleaner", daemon=True)
        self.passes = 0  # since start, for tests and logs

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                cleaned = self.clean_dirtiest()
            except Exception:  # noqa: BLE001 - a bug in one round must not end the thread
                log.exception("log cleaner round failed")
                cleaned = False
            if not cleaned:
                self._stop.wait(self._backoff_ms / 1000)

    def clean_dirtiest(self) -> bool:
        """One round: a pass over the dirtiest due log; False when none was due."""
        now_ms = self._clock.now_ms()
        candidates = []
        ratio_max, lag_ms_max = 0.0, 0
        live = set()
        for hosted in self._hosted():
            config = hosted.log.config
            if not (hosted.usable and config.compacts):
                continue
            key = id(hosted.log)
            live.add(key)
            weighed = hosted.run(_weigh, self._first_dirty.get(key, 0))
            if weighed is None:
                continue
            segments, first_dirty = weighed
            ratio = dirty_ratio(segments, first_dirty)
            dirty = [s for s in segments if s.next_offset > first_dirty]
            ratio_max = max(ratio_max, ratio)
            if dirty:
                lag_ms_max = max(lag_ms_max, now_ms - min(s.max_timestamp_ms for s in dirty))
            due = is_due(segments, first_dirty, now_ms=now_ms, min_cleanable_dirty_ratio=config.min_cleanable_dirty_ratio,
                         max_compaction_lag_ms=config.max_compaction_lag_ms) or (
                now_ms - self._oldest_tombstone_ms.get(key, now_ms) > config.delete_retention_ms)
            if due and self._resting_until_ms.get(key, 0) <= now_ms:
                candidates.append((ratio, hosted, first_dirty))
        for key in list(self._first_dirty):
            if key not in live:  # a replica deleted or reloaded: its log object is gone
                del self._first_dirty[key]
                self._resting_until_ms.pop(key, None)
                self._oldest_tombstone_ms.pop(key, None)
        if self._metrics is not None:
            self._metrics.cleaner_dirty_ratio.set(ratio_max)
            self._metrics.cleaner_lag_s.set(max(lag_ms_max, 0) / 1000)
        if not candidates:
            return False
        _, hosted, first_dirty = max(candidates, key=lambda c: c[0])
        self._clean(hosted, first_dirty, now_ms)
        return True

    def _clean(self, hosted: HostedPartition, first_dirty: int, now_ms: int) -> None:
        key = id(hosted.log)
        throttle = Throttle(self._bytes_per_second, time.monotonic, self._stop.wait, self._stop.is_set)
        started_s = time.monotonic()
        try:
            result: PassResult = clean_log(
                hosted.log, lambda step: hosted.run(_locked, step), upper_offset=lambda: hosted.replica.high_watermark,
                now_ms=now_ms, keys_max=self._keys_max, throttle=throttle, first_dirty_offset=first_dirty)
        except CleaningStopped:
            return
        except (OSError, ValueError) as exc:  # ValueError: a damaged batch (CorruptRecordError); left for later
            log.error("%s: the log cleaner could not clean the log: %s", hosted.topic_partition, exc)
            self._resting_until_ms[key] = now_ms + self._backoff_ms
            return
        self.passes += 1
        if result.first_dirty_offset <= first_dirty:  # nothing cleanable yet (min.compaction.lag.ms, the HW)
            self._resting_until_ms[key] = now_ms + self._backoff_ms
        self._first_dirty[key] = max(result.first_dirty_offset, first_dirty)
        if result.oldest_tombstone_ms is None:
            self._oldest_tombstone_ms.pop(key, None)
        else:
            self._oldest_tombstone_ms[key] = result.oldest_tombstone_ms
        if self._metrics is not None:
            self._metrics.cleaner_bytes.inc(result.bytes_read + result.bytes_written)
            self._metrics.cleaner_records_removed.inc(result.records_removed)
        log.info("%s: cleaned %d segment(s) in %.2f s: %d records removed, %d bytes read, %d written; dirty from %d",
                 hosted.topic_partition, result.segments_rewritten, time.monotonic() - started_s,
                 result.records_removed, result.bytes_read, result.bytes_written, self._first_dirty[key])


def _weigh(hosted: HostedPartition, first_dirty: int):
    if not hosted.usable:
        return None, NO_EFFECTS
    segments = hosted.log.cleanable_segments()
    upper = hosted.replica.high_watermark
    cleanable = [s for s in segments if s.next_offset <= upper]
    return (cleanable, max(first_dirty, hosted.log.log_start_offset)), NO_EFFECTS


def _locked(hosted: HostedPartition, step):
    if not hosted.usable:
        raise OSError("the replica's log was closed during cleaning")
    return step(), NO_EFFECTS
