"""Run the broker simulation over many fresh seeds, or replay one: `make simulate SEEDS=N` / `SEED=S`.

    .venv/bin/python -m tests.scenario.broker.simulate --seeds 5000   # fresh seeds from a printed base
    .venv/bin/python -m tests.scenario.broker.simulate --seed 1234    # replay one seed exactly
    .venv/bin/python -m tests.scenario.broker.simulate --seed 1234 --shrink   # and shrink it if it fails
    .venv/bin/python -m tests.scenario.broker.simulate --seeds 100 --base 7 --workers 1

The seeds are split across `--workers` processes (sim_runs.py; two by default). It prints the base
seed first, each failure with the commands that replay and shrink it (`--shrink`: sim_shrink.py,
the short schedule printed and written under regressions/), and last one JSON line of what the run
exercised, with the processor time it took (`cpu_s`). The members are two controller processes running the real controller core
(sim_controller_node.py: one active, one standby) over a simulated ZooKeeper (tests/scenario/sim_zookeeper.py)
and three brokers running the real broker core (sim_zk_cluster.py). `controllers` counts the controller
processes, `controller_seats_won` the seats they won (a failover is every one after a seed's first),
`zookeeper_expiries` the ZooKeeper sessions that expired (brokers cut off or dead, controllers killed,
paused or expired). `disk_faults` counts power losses (what a log held unsynced is lost), restarts
from a stale HW checkpoint, fsync errors (the append is refused, the broker halts and loses its unsynced
tail) and torn writes (a power loss or halt after which part of the unsynced tail survived: counted
beside the loss it came with); `crashes` every broker crash or bounce; `brokers_isolated` brokers cut off
from ZooKeeper and the controllers while they ran on; `client_delivered` the records the client library's
idempotent producers (sim_producer.py) reported written. Exit status 1 when a seed failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from tests.scenario.broker.sim_members import REPLICAS
from tests.scenario.broker.sim_producer import quiet_client_warnings
from tests.scenario.broker.sim_runs import RunTotals, default_workers, run_seeds, storage_failures_unlogged
from tests.scenario.broker.sim_schedule import fresh_base_seed, replay_command, shrink_command
from tests.scenario.broker.sim_shrink import record, shrink, write_regression


def summary(totals: RunTotals, *, base_seed: int | None) -> dict:
    return {
        "seeds": totals.seeds,
        "failures": totals.failures,
        "first_failing_seed": totals.first_failing_seed,
        "base_seed": base_seed,
        "elapsed_s": round(totals.elapsed_s, 2),
        "schedules_per_s": round(totals.seeds / totals.elapsed_s, 1) if totals.elapsed_s else None,
        "workers": totals.workers,
        "cpu_s": round(totals.cpu_s, 2),
        "controllers": totals.controllers,
        "controller_seats_won": totals.seats_won,
        "brokers": len(REPLICAS),
        "messages": totals.messages,
        "network_faults": totals.network_faults,
        "disk_faults": totals.power_losses + totals.stale_checkpoints + totals.fsync_errors + totals.torn_writes,
        "power_losses": totals.power_losses,
        "stale_checkpoint_restarts": totals.stale_checkpoints,
        "fsync_errors": totals.fsync_errors,
        "torn_writes": totals.torn_writes,
        "crashes": totals.crashes,
        "zookeeper_expiries": totals.zookeeper_expiries,
        "brokers_isolated": totals.isolations,
        "records_committed": totals.committed,
        "acks_all_acknowledged": totals.acked,
        "client_delivered": totals.delivered,
    }


def shrink_and_keep(seed: int) -> None:
    """Shrink the seed's failing schedule, print it, and write it as a regression test."""
    with storage_failures_unlogged():
        schedule, failure = record(seed)
        assert failure is not None, f"seed {seed} failed in the run but not when recorded"
        shrunk = shrink(schedule, failure)
    print(f"shrunk seed {seed} from {shrunk.steps_before} steps to {len(shrunk.schedule.steps)} "
          f"({shrunk.replays} replays, {shrunk.elapsed_s:.1f} s); it still fails with {shrunk.kind}:", flush=True)
    for step in shrunk.schedule.steps:
        print(f"  {step.pause_ms:>4} ms {'stormy' if step.stormy else 'calm  '} {step.action}", flush=True)
    path = write_regression(shrunk, f"seed_{seed}", why=f"The shrunk schedule of seed {seed}, which failed.")
    print(f"written to {path}: fix the bug, then keep it as a regression test", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--seeds", type=int, default=1_000, help="how many fresh seeds to run")
    choice.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--base", type=int, help="the first seed of the run (default: drawn at random)")
    parser.add_argument("--keep-going", action="store_true", help="run every seed even after a failure")
    parser.add_argument("--shrink", action="store_true",
                        help="shrink the first failing seed's schedule and write it as a test under regressions/")
    parser.add_argument("--workers", type=int, default=default_workers(),
                        help="processes to split the seeds across (default: %(default)s)")
    args = parser.parse_args(argv)
    quiet_client_warnings()
    if args.seed is not None:
        base, seeds = None, [args.seed]
        print(f"broker simulation: replaying seed {args.seed}", flush=True)
    else:
        base = fresh_base_seed() if args.base is None else args.base
        seeds = range(base, base + args.seeds)
        print(f"broker simulation: {args.seeds} seeds from base seed {base}", flush=True)
    totals = run_seeds(seeds, stop_at_first_failure=not args.keep_going, workers=args.workers)
    if totals.failures:
        print(totals.first_failure, file=sys.stderr)
        print(f"FAILED: seed {totals.first_failing_seed}; replay: {replay_command(totals.first_failing_seed)}; "
              f"shrink: {shrink_command(totals.first_failing_seed)}", file=sys.stderr, flush=True)
        if args.shrink:
            shrink_and_keep(totals.first_failing_seed)
    print(json.dumps(summary(totals, base_seed=base)), flush=True)
    return 1 if totals.failures else 0


if __name__ == "__main__":
    sys.exit(main())
