"""Periodic durability chores: fsync rolled segments, flush logs whose interval is due,
checkpoint HWs and recovery points.

One thread. Every `flush_check_interval_ms` it fsyncs the segments each log
rolled since the last tick (off the append path, see
HostedPartition.sync_rolled_segments), asks each log whether its interval
flush policy is due (`PartitionLog.maybe_flush`; skipped when no flush
interval is configured, so 10K idle partitions cost a tick nothing), and every
`checkpoint_interval_ms` it atomically rewrites the HW and recovery-point
checkpoint files (ReplicaManager.write_checkpoints). Once at least
`SETTLE_AFTER_CREATED` replicas have been created since it last looked, it also
settles the garbage collector (replog.common.gc_policy): thousands of new
replicas are long-lived state that every later full collection would scan
again, on whatever request thread allocates at that moment. Each tick also runs
the other chores it was given that keep something cheap for later (the
metadata cache folding changed partitions into its digest, so a new
controller's confirm does not hash them all at once). A failure to write a
checkpoint is logged and retried next round: the previous file stays intact
(temp file + rename), so the broker only restarts from an older, still safe,
point. Shutdown writes them once more after closing every log.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Sequence

from replog.broker.adapters.replica_manager import ReplicaManager
from replog.broker.adapters.thread_guard import guarded_round
from replog.common import gc_policy
from replog.common.clock import Clock

log = logging.getLogger(__name__)

SETTLE_AFTER_CREATED = 500


class Checkpointer:
    def __init__(self, replicas: ReplicaManager, clock: Clock, *, checkpoint_interval_ms: int,
                 flush_check_interval_ms: int, interval_flush: bool = True,
                 chores: Sequence[Callable[[], None]] = ()) -> None:
        self._replicas = replicas
        self._chores = tuple(chores)
        self._clock = clock
        self._interval_flush = interval_flush
        self._checkpoint_interval_ms = checkpoint_interval_ms
        self._tick_ms = max(min(flush_check_interval_ms, checkpoint_interval_ms), 10)
        self._created = 0  # replicas created since the collector was last settled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpointer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        self._next_checkpoint_ms = self._clock.monotonic_ms() + self._checkpoint_interval_ms
        while not self._stop.wait(self._tick_ms / 1000):
            guarded_round(self._round, self._stop)

    def _round(self) -> None:
        self._created += self._replicas.take_created()
        if self._created >= SETTLE_AFTER_CREATED:
            seconds = gc_policy.settle()
            log.info("%d new replicas: collected garbage and froze the survivors in %.3f s", self._created, seconds)
            self._created = 0
        for chore in self._chores:
            chore()
        try:
            for hosted in self._replicas.hosted():
                hosted.sync_rolled_segments()
            if self._clock.monotonic_ms() >= self._next_checkpoint_ms:
                self._replicas.write_checkpoints(flush_if_due=True)
                self._next_checkpoint_ms = self._clock.monotonic_ms() + self._checkpoint_interval_ms
            elif self._interval_flush:
                for hosted in self._replicas.hosted():
                    hosted.checkpoint_offsets(flush_if_due=True)
        except OSError as exc:
            log.error("checkpoint or flush failed (retrying next round): %s", exc)
