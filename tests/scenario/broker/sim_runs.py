"""Runs of many seeds: one process, or the seed list split across worker processes, with one merged total.

Each seed is its own schedule (sim_schedule.run_schedule) and depends on nothing but its number, so
seeds run in any process give the same result. `run_seeds(seeds, workers=2)` deals the list out
round-robin (worker k runs positions k, k+n, k+2n, ... in order) to forked processes, so a mutation
planted in this process (mutations.py) is planted in them too, and merges what they report.

Which failure is reported does not depend on the split: the failing seed earliest in the list. With
`stop_at_first_failure`, a worker that fails at position p publishes p, and every worker stops before
a position past the lowest one published; the positions before it still run, so an earlier failure
in another worker's share is still found. The count of seeds run may then exceed the sequential
count by what the other workers had started.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
import queue
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from replog.broker.logdirs import log_dir_failures

from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_schedule import run_schedule

SIM_WORKERS = 2  # the CI machine's cores
WORKER_POLL_S = 1.0  # how often the parent looks whether a worker died without reporting
NO_FAILURE = 2**62  # the position published while nothing failed


@dataclass
class RunTotals:
    """What a run of many seeds went through."""

    seeds: int = 0
    failures: int = 0
    first_failure: str = ""
    first_failing_seed: int | None = None
    first_failing_position: int = NO_FAILURE  # its place in the seed list
    elapsed_s: float = 0.0
    cpu_s: float = 0.0  # the workers' processor time, summed
    workers: int = 1
    network_faults: int = 0
    messages: int = 0
    crashes: int = 0
    power_losses: int = 0
    stale_checkpoints: int = 0
    isolations: int = 0
    torn_writes: int = 0
    fsync_errors: int = 0
    committed: int = 0
    acked: int = 0
    delivered: int = 0  # records the client library's producers reported written
    controllers: int = 0  # controller processes of a schedule
    zookeeper_expiries: int = 0
    seats_won: int = 0  # controller seats won; every one after a schedule's first is a failover

    def add(self, cluster: SimCluster) -> None:
        controllers, expiries, seats = cluster.control_counts()
        self.controllers = max(self.controllers, controllers)
        self.zookeeper_expiries += expiries
        self.seats_won += seats
        counts = cluster.counts()
        self.crashes += counts.crashes
        self.power_losses += counts.power_losses
        self.stale_checkpoints += counts.stale_checkpoints
        self.isolations += counts.isolations
        self.torn_writes += counts.torn_writes
        self.fsync_errors += counts.fsync_errors
        self.committed += len(cluster.committed)
        self.acked += len(cluster.acked)
        self.delivered += len(cluster.delivered)
        if cluster.network is not None:
            self.network_faults += cluster.network.counts.faults
            self.messages += cluster.network.counts.sent

    def failed(self, position: int, seed: int, failure: Exception) -> None:
        self.failures += 1
        if position < self.first_failing_position:
            self.first_failing_position = position
            self.first_failing_seed = seed
            self.first_failure = str(failure) if isinstance(failure, AssertionError) else repr(failure)

    def merge(self, other: RunTotals) -> None:
        """Add another worker's share (elapsed time and worker count are the caller's)."""
        summed = ("seeds", "failures", "cpu_s", "network_faults", "messages", "crashes", "power_losses",
                  "stale_checkpoints", "isolations", "torn_writes", "fsync_errors", "committed", "acked",
                  "delivered", "zookeeper_expiries", "seats_won")
        for name in summed:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.controllers = max(self.controllers, other.controllers)
        if other.first_failing_position < self.first_failing_position:
            self.first_failing_position = other.first_failing_position
            self.first_failing_seed = other.first_failing_seed
            self.first_failure = other.first_failure


def run_seeds(seeds, *, stop_at_first_failure: bool = True, workers: int = 1) -> RunTotals:
    """Run every seed (up to the first failure, by default); `workers` > 1 splits them across processes."""
    seeds = list(seeds)
    workers = max(1, min(workers, len(seeds)))
    started = time.monotonic()
    if workers == 1:
        totals = _run_share(list(enumerate(seeds)), stop_at_first_failure, None)
    else:
        totals = _run_split(seeds, stop_at_first_failure, workers)
    totals.workers = workers
    totals.elapsed_s = time.monotonic() - started
    return totals


@contextmanager
def storage_failures_unlogged() -> Iterator[None]:
    """The simulated disks fail on purpose, about once a schedule: the broker's log line for each
    (logdirs/log_dir_failures.py, critical in production) would bury a run's output, so it is off meanwhile."""
    logger = logging.getLogger(log_dir_failures.__name__)
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _run_share(share: list[tuple[int, int]], stop_at_first_failure: bool, first_failed) -> RunTotals:
    """Run (position, seed) pairs in order; `first_failed`: the lowest failing position any worker published."""
    with storage_failures_unlogged():
        return _run_share_logged_off(share, stop_at_first_failure, first_failed)


def _run_share_logged_off(share: list[tuple[int, int]], stop_at_first_failure: bool, first_failed) -> RunTotals:
    totals = RunTotals()
    cpu_started = time.process_time()
    for position, seed in share:
        if first_failed is not None and position > first_failed.value:
            break
        totals.seeds += 1
        try:
            totals.add(run_schedule(seed))
        except Exception as failure:  # noqa: BLE001  (a core that raises on a schedule failed it too)
            totals.failed(position, seed, failure)
            if stop_at_first_failure:
                if first_failed is not None:
                    with first_failed.get_lock():
                        first_failed.value = min(first_failed.value, position)
                break
    totals.cpu_s = time.process_time() - cpu_started
    return totals


def _worker(share, stop_at_first_failure, first_failed, results) -> None:
    results.put(_run_share(share, stop_at_first_failure, first_failed))


def _run_split(seeds: list[int], stop_at_first_failure: bool, workers: int) -> RunTotals:
    context = multiprocessing.get_context("fork")  # the children inherit this process's modules, mutants included
    first_failed = context.Value("q", NO_FAILURE)
    results = context.Queue()
    numbered = list(enumerate(seeds))
    processes = [
        context.Process(target=_worker, args=(numbered[k::workers], stop_at_first_failure, first_failed, results),
                        name=f"sim-worker-{k}", daemon=True)
        for k in range(workers)
    ]
    for process in processes:
        process.start()
    totals = RunTotals()
    received = 0
    try:
        while received < workers:  # each worker puts exactly one total, then exits
            try:
                totals.merge(results.get(timeout=WORKER_POLL_S))
                received += 1
            except queue.Empty:
                died = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                assert not died, f"a simulation worker died (exit codes {died}) before reporting"
    finally:
        for process in processes:
            process.join(timeout=WORKER_POLL_S)
            if process.is_alive():
                process.kill()
    return totals


def default_workers() -> int:
    return max(1, min(SIM_WORKERS, os.cpu_count() or 1))
