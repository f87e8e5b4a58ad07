"""Retention over every hosted replica, a bounded slice per checkpointer round.

Theory of operation (docs/architecture.md, "Storage"; Kafka's log.retention.check.interval.ms):

Every `check_interval_ms` a pass begins over the replicas hosted at that
moment, leaders and followers alike. Each round of the checkpointer thread
(one a second by default) checks at most `partitions_per_round_max` of them, so
a pass over 10,000 partitions is spread over several rounds and no round holds
the thread long; checking a replica takes its lock for one step
(log_maintenance.py), which deletes whole segments below its HW. The pass
snapshot is a plain list: a replica deleted meanwhile is skipped by its step, a
new one waits for the next pass. The checkpointer skips rounds while the
controller's requests keep arriving, so retention also waits out a failover.
"""

from __future__ import annotations

import logging
from typing import Callable

from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.maintenance.log_maintenance import apply_retention
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common.clock import Clock

log = logging.getLogger(__name__)


class RetentionRounds:
    def __init__(self, hosted: Callable[[], list[HostedPartition]], clock: Clock, *, check_interval_ms: int,
                 partitions_per_round_max: int, metrics: BrokerMetrics | None = None) -> None:
        assert check_interval_ms > 0 and partitions_per_round_max > 0
        self._hosted = hosted
        self._clock = clock
        self._check_interval_ms = check_interval_ms
        self._partitions_per_round_max = partitions_per_round_max
        self._next_pass_ms = clock.monotonic_ms() + check_interval_ms
        self._pass: list[HostedPartition] = []
        self._cursor = 0
        self._metrics = metrics
        self.segments_deleted = 0  # since start, for tests and logs

    def __call__(self) -> None:
        """One round: continue the pass in progress, or begin one when it is time."""
        if self._cursor >= len(self._pass):
            now_ms = self._clock.monotonic_ms()
            if now_ms < self._next_pass_ms:
                return
            self._next_pass_ms = now_ms + self._check_interval_ms
            self._pass, self._cursor = self._hosted(), 0
        end = min(self._cursor + self._partitions_per_round_max, len(self._pass))
        wall_ms, started_ms = self._clock.now_ms(), self._clock.monotonic_ms()
        deleted = trimmed = 0
        for hosted in self._pass[self._cursor:end]:
            try:
                count = apply_retention(hosted, wall_ms)
            except OSError as exc:  # the files stay; the next pass tries again
                log.error("%s: retention could not delete segments: %s", hosted.topic_partition, exc)
                continue
            deleted += count
            trimmed += count > 0
        self.segments_deleted += deleted
        round_ms = self._clock.monotonic_ms() - started_ms
        if deleted:
            log.info("retention deleted %d segment(s) of %d partition(s) in %d ms (%d of %d checked in this pass)",
                     deleted, trimmed, round_ms, end, len(self._pass))
        if self._metrics is not None:
            self._metrics.retention_segments_deleted.inc(deleted)
            self._metrics.retention_round_s.observe(round_ms / 1000)
        self._cursor = end
        if end >= len(self._pass):
            self._pass, self._cursor = [], 0
