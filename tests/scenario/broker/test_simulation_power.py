"""The simulation still finds planted bugs (mutations.py): its power cannot rot silently.

Each case plants one mutation (mutations.py) and replays the fixed seed that found it when
docs/testing.md's table was made; the schedule must fail, and pass again once the core is restored.
`make simulate-mutations` hunts every mutation over fresh runs of seeds.
"""

from __future__ import annotations

import pytest

from tests.scenario.broker.mutations import MUTATIONS, applied
from tests.scenario.broker.sim_schedule import run_schedule

FOUND_BY = {"hw-past-isr-minimum": 0, "strict-min-isr-off": 12, "follower-acks-before-write": 0,
            "controller-write-fence-removed": 343, "client-retry-new-sequence": 0, "fsync-error-taken-for-shortage": 28}


@pytest.mark.parametrize("name", sorted(FOUND_BY))
def test_a_planted_bug_fails_its_known_seed(name):
    mutation = next(m for m in MUTATIONS if m.name == name)
    seed = FOUND_BY[name]
    with applied(mutation), pytest.raises(AssertionError, match=f"seed={seed} "):
        run_schedule(seed)
    run_schedule(seed)  # the real core passes the same schedule


def test_every_mutation_names_a_bound_core_function():
    for mutation in MUTATIONS:
        with applied(mutation):
            pass
