"""Periodic durability chores: fsync rolled segments, flush logs whose interval is due,
checkpoint HWs and recovery points.

One thread. Every `flush_check_interval_ms` it fsyncs the segments each log
rolled since the last tick (off the append path, see
HostedPartition.sync_rolled_segments), asks each log whether its interval
flush policy is due (`PartitionLog.maybe_flush`; skipped when no flush
interval is configured, so idle partitions cost a tick nothing), and every
`checkpoint_interval_ms` it atomically rewrites the HW and recovery-point
checkpoint files (ReplicaManager.write_checkpoints). Once at least
`SETTLE_AFTER_CREATED` replicas have been created since it last looked, it also
settles the garbage collector (replog.common.gc_policy): new replicas are
long-lived state that every later full collection would scan again, on
whatever request thread allocates at that moment (docs/perf/gc-freeze.md). Each tick also runs
the other chores it was given that keep something cheap for later (the
metadata cache folding changed partitions into its digest, so a new
controller's confirm does not hash them all at once). A failure to write a
checkpoint is logged and retried next round: the previous file stays intact
(temp file + rename), so the broker only restarts from an older, still safe,
point. Shutdown writes them once more after closing every log.

None of that is urgent, and all of it is Python work over every hosted
partition, which during a failover competes with the work that makes
partitions writable again (docs/perf/checkpointer-bursts.md). So while the
controller's requests keep arriving (`ControlBursts`: a LeaderAndIsr,
StopReplica or UpdateMetadata less than BURST_QUIET_MS ago) a round does only
the interval flushes the operator asked for, and the rest waits for the first
tick after the burst, or BURST_DEFER_MAX_MS at most. Waiting is safe: a
checkpoint older by a second only makes a restart truncate or recover from an
older, still safe point, and the digest is folded on demand by a confirm.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Sequence

from replog.broker.replicas.replica_manager import ReplicaManager
from replog.broker.runtime.thread_guard import guarded_round
from replog.common import gc_policy
from replog.common.clock import Clock

log = logging.getLogger(__name__)

SETTLE_AFTER_CREATED = 500
BURST_QUIET_MS = 1_000  # the controller's requests count as one burst until they pause this long
BURST_DEFER_MAX_MS = 10_000  # a round waits for a burst to end this long at most


class ControlBursts:
    """When the controller's last request arrived (the control servicer notes each)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last_ms: int | None = None

    def note(self) -> None:
        self._last_ms = self._clock.monotonic_ms()

    def in_burst(self, now_ms: int) -> bool:
        last = self._last_ms
        return last is not None and now_ms - last < BURST_QUIET_MS


class Checkpointer:
    def __init__(self, replicas: ReplicaManager, clock: Clock, *, checkpoint_interval_ms: int,
                 flush_check_interval_ms: int, interval_flush: bool = True,
                 chores: Sequence[Callable[[], None]] = (), bursts: ControlBursts | None = None) -> None:
        self._replicas = replicas
        self._bursts = bursts
        self._deferred_since_ms: int | None = None  # when rounds began waiting for a burst to end
        self._chores = tuple(chores)
        self._clock = clock
        self._interval_flush = interval_flush
        self._checkpoint_interval_ms = checkpoint_interval_ms
        self._tick_ms = max(min(flush_check_interval_ms, checkpoint_interval_ms), 10)
        self._created = 0  # replicas created since the collector was last settled
        self._next_checkpoint_ms = clock.monotonic_ms() + checkpoint_interval_ms
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpointer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self._tick_ms / 1000):
            guarded_round(self._round, self._stop)

    def _round(self) -> None:
        if self._waits_for_burst():
            if self._interval_flush:
                self._replicas.flush_due()  # an OSError takes its directory offline (logdirs/log_dir_failures.py)
            return
        self._created += self._replicas.take_created()
        if self._created >= SETTLE_AFTER_CREATED:
            seconds = gc_policy.settle()
            log.info("%d new replicas: collected garbage and froze the survivors in %.3f s", self._created, seconds)
            self._created = 0
        for chore in self._chores:
            chore()
        # each of these takes a directory offline on an OSError there (logdirs/log_dir_failures.py)
        self._replicas.sync_rolled_segments()
        if self._clock.monotonic_ms() >= self._next_checkpoint_ms:
            self._replicas.write_checkpoints(flush_if_due=True)
            self._next_checkpoint_ms = self._clock.monotonic_ms() + self._checkpoint_interval_ms
        elif self._interval_flush:
            self._replicas.flush_due()

    def _waits_for_burst(self) -> bool:
        now_ms = self._clock.monotonic_ms()
        if self._bursts is None or not self._bursts.in_burst(now_ms):
            self._deferred_since_ms = None
            return False
        if self._deferred_since_ms is None:
            self._deferred_since_ms = now_ms
        if now_ms - self._deferred_since_ms < BURST_DEFER_MAX_MS:
            return True
        self._deferred_since_ms = None  # waited long enough: this round runs, the next may wait again
        return False
