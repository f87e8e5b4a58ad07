"""Planted bugs: the simulation must find each one (`make simulate-mutations`).

Each mutation replaces one function in this process: of the broker core (services/broker/src/
replog/broker/core/), of its storage-error channel (logdirs/log_dir_failures.py), or, for the
controller's write fence, of the simulation's controller adapter
(sim_controller_node.fence_ops, what zk_writer.py puts first in every multi), everywhere it is bound
(the core's own modules import each other's functions by name, and so do the simulation's), or one
method of the client library's producer (the simulation's producers run it: sim_producer.py), runs
seeds from 0 until a schedule fails, and puts the function back. A mutation the simulation does not
find within SEEDS_MAX seeds (one default-suite run's worth) is a hole in the simulation's power, and
the runner exits 1.

    .venv/bin/python -m tests.scenario.broker.mutations            # all of them
    .venv/bin/python -m tests.scenario.broker.mutations strict-min-isr-off
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from replog.broker.core import follower_steps, partition
from replog.broker.core.fetch import truncation
from replog.broker.core.isr import high_watermark
from replog.broker.core.log_view import NO_OFFSET
from replog.client.accumulator import Accumulator
from replog.broker.logdirs import log_dir_failures
from tests.scenario.broker import sim_controller_node
from tests.scenario.broker.sim_producer import quiet_client_warnings
from tests.scenario.broker.sim_runs import default_workers, run_seeds
from tests.scenario.broker.sim_schedule import SIM_SEEDS_DEFAULT

SEEDS_MAX = SIM_SEEDS_DEFAULT


def _hw_past_isr_minimum(isr, log_end_offsets):
    """The HW candidate is the second-lowest LEO of the ISR (a majority's), not the lowest."""
    offsets = sorted(log_end_offsets.get(replica_id, NO_OFFSET) for replica_id in isr)
    return offsets[1] if len(offsets) > 1 else offsets[0]


def _truncate_ignoring_epoch(log, answer):
    """Keep up to the offset the leader named, whether or not our records there are of that epoch."""
    if answer.is_undefined:
        return truncation.TruncateTo(log.log_start_offset)
    return truncation.TruncateTo(max(log.log_start_offset, min(answer.end_offset, log.log_end_offset)))


def _unfenced(original):
    def apply_leader_and_isr(current, decision, **kwargs):
        """A LeaderAndIsr with an older leader epoch than held is applied like a newer one."""
        if 0 <= decision.leader_epoch < current.leader_epoch:
            return partition._new_leader_epoch(current, decision)
        return original(current, decision, **kwargs)
    return apply_leader_and_isr


def _acks_before_write(original):
    def append_from_leader(partition, **kwargs):
        """The follower's write is not on disk before its next fetch reports the position past it."""
        return original(partition, **{**kwargs, "fsync": False})
    return append_from_leader


def _never_held(isr_size, min_insync_replicas, replica_count):
    """The HW moves while the ISR is below min.insync.replicas."""
    return False


def _every_error_a_shortage(exc):
    """Every OSError is taken for EMFILE: a failed fsync leaves the directory online and the broker on."""
    return True


def _no_write_fence(controller_epoch_version):
    """A controller's multi no longer checks /controller_epoch's version: a deposed one writes."""
    return []


def _retry_renumbered(original):
    def retry(accumulator, batch):
        """A batch to retry is encoded again, so it leaves with the partition's next sequence, not its own."""
        batch.encoded = None
        return original(accumulator, batch)
    return retry


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    module: object
    function: str
    make: Callable[[Callable], Callable]


MUTATIONS = (
    Mutation("hw-past-isr-minimum", "the leader's HW advances to the second-lowest LEO of the ISR",
             high_watermark, "high_watermark_candidate", lambda _original: _hw_past_isr_minimum),
    Mutation("truncation-ignores-epoch", "a follower truncates to the leader's end offset without comparing epochs",
             truncation, "_decide", lambda _original: _truncate_ignoring_epoch),
    Mutation("fence-removed", "a broker applies a LeaderAndIsr of an older leader epoch than it holds (the "
             "FENCED_LEADER_EPOCH check of partition.apply_leader_and_isr removed)", partition,
             "apply_leader_and_isr", _unfenced),
    Mutation("follower-acks-before-write", "a follower appends without fsync in the durable mode, so the "
             "position its next fetch reports is not yet written", follower_steps, "append_from_leader",
             _acks_before_write),
    Mutation("strict-min-isr-off", "the HW is not held while the ISR is below min.insync.replicas",
             high_watermark, "held_below_min_isr", lambda _original: _never_held),
    Mutation("fsync-error-taken-for-shortage", "an append whose fsync failed is taken for one that ran out of "
             "file descriptors (nothing written, retry): the directory stays online and the broker carries on "
             "with the batch in its log, on pages the disk may have dropped", log_dir_failures,
             "is_out_of_descriptors", lambda _original: _every_error_a_shortage),
    Mutation("controller-write-fence-removed", "the controller's ZooKeeper writes no longer check the "
             "/controller_epoch version they won the seat with", sim_controller_node, "fence_ops",
             lambda _original: _no_write_fence),
    Mutation("client-retry-new-sequence", "the client's producer retries a batch under a new sequence number, "
             "so a leader that already appended it appends it again", Accumulator, "retry", _retry_renumbered),
)


@contextmanager
def applied(mutation: Mutation) -> Iterator[None]:
    """Bind the mutant wherever the original is bound, in the core and the simulation; undo on exit."""
    original = getattr(mutation.module, mutation.function)
    mutant = mutation.make(original)
    replaced = []
    if isinstance(mutation.module, type):  # a method: bound on its class alone
        setattr(mutation.module, mutation.function, mutant)
        replaced.append((mutation.module, mutation.function))
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        if not (name.startswith("replog.broker") or name.startswith("tests.scenario.")):
            continue
        for attribute, value in list(vars(module).items()):
            if value is original:
                setattr(module, attribute, mutant)
                replaced.append((module, attribute))
    assert replaced, f"{mutation.function} is bound nowhere"
    try:
        yield
    finally:
        for module, attribute in replaced:
            setattr(module, attribute, original)


def hunt(mutation: Mutation, seeds_max: int = SEEDS_MAX) -> dict:
    """Run seeds 0, 1, ... under the mutation until one fails."""
    started = time.monotonic()
    with applied(mutation):
        totals = run_seeds(range(seeds_max), workers=default_workers())  # forked workers inherit the mutant
    return {
        "mutation": mutation.name,
        "what": mutation.what,
        "found": totals.failures > 0,
        "first_seed": totals.first_failing_seed,
        "seeds_run": totals.seeds,
        "elapsed_s": round(time.monotonic() - started, 2),
        "failure": totals.first_failure.splitlines()[0] if totals.failures else "",
    }


def main(argv: list[str]) -> int:
    quiet_client_warnings()
    chosen = [m for m in MUTATIONS if not argv or m.name in argv]
    results = []
    for mutation in chosen:
        result = hunt(mutation)
        results.append(result)
        verdict = f"found by seed {result['first_seed']} after {result['seeds_run']} seeds" if result["found"] \
            else f"NOT FOUND in {result['seeds_run']} seeds"
        print(f"{mutation.name}: {verdict} ({result['elapsed_s']} s): {result['failure']}", flush=True)
    missed = [r["mutation"] for r in results if not r["found"]]
    print(json.dumps({"mutations": len(results), "found": len(results) - len(missed), "missed": missed,
                      "seeds_max": SEEDS_MAX, "results": results}), flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
