"""The shrinker (sim_shrink.py) on a planted bug: a short schedule that fails with it and passes without."""

from __future__ import annotations

import importlib.util

import pytest

from tests.scenario.broker.mutations import MUTATIONS, applied
from tests.scenario.broker.sim_schedule import run_schedule
from tests.scenario.broker.sim_shrink import record, replay, shrink, write_regression


def test_a_recorded_schedule_replays_as_its_seed_ran():
    for seed in (2, 3):
        schedule, failure = record(seed)
        assert failure is None
        ran, replayed = run_schedule(seed), replay(schedule)
        assert replayed.logs() == ran.logs() and replayed.committed == ran.committed
        assert replayed.events[: len(schedule.steps)] == ran.events[: len(schedule.steps)]


def test_a_planted_bug_shrinks_to_a_short_schedule_that_fails_only_with_it(tmp_path):
    mutation = next(m for m in MUTATIONS if m.name == "hw-past-isr-minimum")
    with applied(mutation):
        schedule, failure = record(0)
        assert failure is not None
        shrunk = shrink(schedule, failure)
        assert len(shrunk.schedule.steps) <= len(schedule.steps) // 4, shrunk.schedule.steps
        with pytest.raises(AssertionError, match="lacks committed records"):
            replay(shrunk.schedule)
    replay(shrunk.schedule)  # the real core passes it

    path = write_regression(shrunk, "planted", why="A planted bug's schedule.", directory=tmp_path)
    spec = importlib.util.spec_from_file_location("shrunk_regression", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.SCHEDULE == shrunk.schedule
    module.test_the_shrunk_schedule_keeps_the_invariants()
    with applied(mutation), pytest.raises(AssertionError, match="lacks committed records"):
        module.test_the_shrunk_schedule_keeps_the_invariants()
