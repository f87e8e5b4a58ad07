"""The seeded simulation of the broker cores (sim_schedule.py), as part of the default suite.

Each run takes fresh seeds: a base seed drawn at random (printed, and named in a failure) and
SIM_SEEDS_DEFAULT (10,000) seeds counting up from it (docs/testing.md gives the measured rate). A failure names its seed and the command that replays it exactly:
`make simulate SEED=1234`, or REPLOG_SIM_SEEDS=1234 (also "1,5,9" or a range "0-999") for this file.
REPLOG_SIM_BASE_SEED fixes the base, REPLOG_SIM_COUNT the number of seeds.
"""

from __future__ import annotations

import os

import pytest

from tests.scenario.broker.sim_runs import default_workers, run_seeds
from tests.scenario.broker.sim_schedule import (
    SEEDS_ENV,
    SIM_SEEDS_DEFAULT,
    fresh_base_seed,
    heal_everything_and_converge,
    parse_seeds,
    run_schedule,
    settled_state,
    shrink_command,
)


def seeds() -> tuple[str, list[int]]:
    spec = os.environ.get(SEEDS_ENV)
    if spec:
        return f"{SEEDS_ENV}={spec}", parse_seeds(spec)
    base = int(os.environ.get("REPLOG_SIM_BASE_SEED") or fresh_base_seed())
    count = int(os.environ.get("REPLOG_SIM_COUNT") or SIM_SEEDS_DEFAULT)
    return f"base seed {base}", list(range(base, base + count))


# 10,000 schedules took 336 s while a whole suite ran beside them (load 6). tests/run.sh runs this test at
# the lowest priority beside the other tiers, so it may wait for their length: the deadline is the CI's.
@pytest.mark.timeout(5400)
def test_random_schedules_keep_the_invariants():
    origin, chosen = seeds()
    print(f"broker simulation: {len(chosen)} seeds, {origin}")
    totals = run_seeds(chosen, workers=default_workers())
    assert totals.failures == 0, (f"{origin}: seed {totals.first_failing_seed} failed (shrink it: "
                                  f"{shrink_command(totals.first_failing_seed)})\n{totals.first_failure}")


def test_schedules_do_real_work():
    """Guard against a simulation that passes by doing nothing."""
    runs = [run_schedule(seed) for seed in range(20)]
    assert sum(len(c.committed) for c in runs) > 50
    assert sum(len(c.acked) for c in runs) > 10
    assert sum(len(c.delivered) for c in runs) > 10, "the client library's producers deliver"
    # A producer fails for good only after its delivery timeout, which few schedules outlast: seed 63, run
    # for 300 steps, is one (found by trying seeds 0-79; a change to the schedules may move it).
    longer = run_schedule(63, steps=300)
    assert len({d.producer_id for d in longer.delivered}) > 1, "a producer that failed was replaced"
    assert sum(1 for c in runs for e in c.events if "truncated" in e) > 0
    assert sum(len(c.leaders_by_epoch) for c in runs) > 10
    network = [c.network.counts for c in runs]
    assert sum(n.dropped for n in network) > 0 and sum(n.duplicated for n in network) > 0
    assert sum(n.delayed for n in network) > 0 and sum(n.reordered for n in network) > 0
    assert sum(n.partitions for n in network) > 0
    assert sum(c.power_losses for c in runs) > 0 and sum(c.stale_checkpoints for c in runs) > 0
    assert sum(c.fsync_errors for c in runs) > 0 and sum(c.torn_writes for c in runs) > 0
    assert sum(c.zk.expiries for c in runs) > 0, "ZooKeeper sessions expire"
    assert sum(c.truth.failovers for c in runs) > len(runs), "controllers fail over"


def test_the_heal_ends_only_where_further_rounds_change_nothing():
    for seed in range(6):
        cluster = run_schedule(seed)
        settled, logs = settled_state(cluster), cluster.logs()
        assert settled is not None, f"seed {seed} ended its heal unsettled"
        heal_everything_and_converge(cluster)  # more rounds
        assert settled_state(cluster) == settled and cluster.logs() == logs
