"""A failing schedule, recorded as a list of steps and shrunk to a short one that still fails.

A seed's schedule (sim_schedule.run_schedule) draws every step from the seed's generator: the
pause before it, its action (a tuple: ("fetch", 2), ("kill", 3, True), ...) and, while it runs,
the network's draws (each message's latency, loss, copy, delay, which due message goes next).
`record(seed)` runs the seed again with a `Recorder` that keeps them: a `Schedule` of steps
(pause_ms, stormy, action, draws), with the draws of the start and of the final heal.

`replay(schedule)` performs the steps without the seed's generator: the network takes its draws
from the step's recorded list (`ScriptedRandom`), and once a list runs out or a draw no longer fits
(a step whose context changed sends other messages) from a generator seeded by the schedule's seed,
so a schedule replays the same way every time. The full recording replays exactly as the seed ran.

`shrink(schedule)` delta-debugs the step list (Zeller's ddmin: drop chunks, halving them down to
single steps, keep any shorter list that still fails the same way: the same exception and the same
assertion text but for its numbers), then drops what each kept step drew from the network and the
heal's draws, where that still fails. `write_regression` writes the result as a test module under
regressions/ that replays it.

    .venv/bin/python -m tests.scenario.broker.simulate --seed 105 --shrink
"""

from __future__ import annotations

import random
import re
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_schedule import (
    Action,
    heal_everything_and_converge,
    new_clients,
    new_cluster,
    perform,
    run_schedule,
    schedule_failure,
)

REGRESSIONS = Path(__file__).parent / "regressions"
REPLAYS_MAX = 3_000  # a bound on one shrink's work: a few minutes at worst
Draws = tuple  # what the network drew in one step: floats from random(), ints from randint() and choice()


@dataclass(frozen=True)
class Step:
    pause_ms: int
    stormy: bool
    action: Action
    draws: Draws = ()


@dataclass(frozen=True)
class Schedule:
    seed: int  # where it came from; it also seeds the draws a replay makes beyond the recorded ones
    steps: tuple[Step, ...]
    preamble: Draws = ()  # the network's draws while the cluster started
    heal: Draws = ()  # and while it healed at the end


# --- recording -----------------------------------------------------------------------------------------


class RecordingRandom:
    """The network's view of the seed's generator: the same values, each also noted in the current step."""

    def __init__(self, rng: random.Random, recorder: Recorder) -> None:
        self._rng = rng
        self._recorder = recorder

    def random(self) -> float:
        value = self._rng.random()
        self._recorder.draws.append(value)
        return value

    def randint(self, low: int, high: int) -> int:
        value = self._rng.randint(low, high)
        self._recorder.draws.append(value)
        return value

    def choice(self, seq: Sequence):
        index = self._rng.randrange(len(seq))  # what Random.choice draws
        self._recorder.draws.append(index)
        return seq[index]


class Recorder:
    def __init__(self) -> None:
        self.preamble: list = []
        self.heal: list = []
        self.steps: list[list] = []  # [pause_ms, stormy, action, draws]
        self.draws: list = self.preamble

    def watching(self, rng: random.Random) -> RecordingRandom:
        return RecordingRandom(rng, self)

    def begin_step(self, pause_ms: int, stormy: bool) -> None:
        self.draws = []
        self.steps.append([pause_ms, stormy, ("nothing",), self.draws])

    def chose(self, action: Action) -> None:
        self.steps[-1][2] = action

    def begin_heal(self) -> None:
        self.draws = self.heal

    def schedule(self, seed: int) -> Schedule:
        steps = tuple(Step(pause_ms, stormy, action, tuple(draws)) for pause_ms, stormy, action, draws in self.steps)
        return Schedule(seed, steps, tuple(self.preamble), tuple(self.heal))


def record(seed: int) -> tuple[Schedule, AssertionError | None]:
    """The seed's schedule as it ran, and how it failed (None if it passed)."""
    recorder = Recorder()
    try:
        run_schedule(seed, recorder=recorder)
    except AssertionError as failure:
        return recorder.schedule(seed), failure
    return recorder.schedule(seed), None


# --- replaying -----------------------------------------------------------------------------------------


class ScriptedRandom:
    """Hands out the current step's recorded draws in order; past them, or where one does not fit, the fallback's."""

    def __init__(self, fallback: random.Random) -> None:
        self._fallback = fallback
        self._script: deque = deque()

    def play(self, draws: Draws) -> None:
        self._script = deque(draws)

    def random(self) -> float:
        value = self._script.popleft() if self._script else None
        return value if isinstance(value, float) else self._fallback.random()

    def randint(self, low: int, high: int) -> int:
        value = self._script.popleft() if self._script else None
        return value if isinstance(value, int) and low <= value <= high else self._fallback.randint(low, high)

    def choice(self, seq: Sequence):
        value = self._script.popleft() if self._script else None
        return seq[value] if isinstance(value, int) and 0 <= value < len(seq) else self._fallback.choice(seq)


def replay(schedule: Schedule, *, name: str = "") -> SimCluster:
    """Perform the schedule's steps, checking the invariants after each, then heal; raises as a seed does."""
    script = ScriptedRandom(random.Random(schedule.seed))
    cluster = new_cluster(schedule.seed, script)
    script.play(schedule.preamble)
    cluster.start()
    clients = new_clients(cluster, schedule.seed)
    recent: deque[str] = deque(maxlen=12)
    index = -1
    try:
        for index, step in enumerate(schedule.steps):
            script.play(step.draws)
            cluster.network.faulty = step.stormy
            cluster.tick(step.pause_ms)
            recent.append(perform(cluster, clients, step.action))
            cluster.check_invariants()
        script.play(schedule.heal)
        heal_everything_and_converge(cluster)
        clients.consumer.check_against(cluster.leader().log)
    except Exception as failure:
        where = f"schedule {name or f'from seed={schedule.seed}'} step {index} of {len(schedule.steps)}"
        raise schedule_failure(where, name or "its Schedule, with sim_shrink.replay", recent, cluster,
                               failure) from failure
    return cluster


# --- shrinking -----------------------------------------------------------------------------------------


def failure_kind(failure: BaseException) -> str:
    """What failed, without the numbers (offsets, brokers, epochs) that a shorter schedule changes."""
    cause = failure.__cause__ or failure
    first_line = str(cause).splitlines()[0] if str(cause) else ""
    return f"{type(cause).__name__}: {re.sub(r'[0-9]+', 'N', first_line)}"


def fails_as(schedule: Schedule, kind: str) -> bool:
    try:
        replay(schedule)
    except AssertionError as failure:
        return failure_kind(failure) == kind
    return False


@dataclass
class Shrunk:
    schedule: Schedule
    kind: str  # failure_kind of the original failure, which the shrunk schedule keeps
    steps_before: int
    replays: int
    elapsed_s: float


def shrink(schedule: Schedule, failure: BaseException, *, replays_max: int = REPLAYS_MAX) -> Shrunk:
    """The shortest step list ddmin finds that still fails as `failure` did, then with fewer recorded draws."""
    started = time.monotonic()
    kind = failure_kind(failure)
    replays = 0

    def still_fails(candidate: Schedule) -> bool:
        nonlocal replays
        replays += 1
        return fails_as(candidate, kind)

    assert still_fails(schedule), f"the recorded schedule does not fail as the seed did ({kind})"
    steps = _ddmin(list(schedule.steps), lambda s: still_fails(_with_steps(schedule, s)),
                   lambda: replays >= replays_max)
    shrunk = _with_steps(schedule, steps)
    for index in range(len(steps)):  # fewer recorded draws: the fallback's do as well
        if replays >= replays_max or not shrunk.steps[index].draws:
            continue
        steps_now = list(shrunk.steps)
        steps_now[index] = Step(steps_now[index].pause_ms, steps_now[index].stormy, steps_now[index].action)
        candidate = _with_steps(shrunk, steps_now)
        if still_fails(candidate):
            shrunk = candidate
    for candidate in (Schedule(shrunk.seed, shrunk.steps, shrunk.preamble, ()),
                      Schedule(shrunk.seed, shrunk.steps, (), ())):
        if replays < replays_max and still_fails(candidate):
            shrunk = candidate
    return Shrunk(shrunk, kind, len(schedule.steps), replays, time.monotonic() - started)


def _with_steps(schedule: Schedule, steps: list[Step]) -> Schedule:
    return Schedule(schedule.seed, tuple(steps), schedule.preamble, schedule.heal)


def _ddmin(steps: list[Step], fails: Callable[[list[Step]], bool], exhausted: Callable[[], bool]) -> list[Step]:
    """Zeller's ddmin over complements: remove one of n chunks while that still fails; refine n up to single steps."""
    chunks = 2
    while len(steps) >= 2 and not exhausted():
        size = -(-len(steps) // chunks)  # ceiling
        for start in range(0, len(steps), size):
            candidate = steps[:start] + steps[start + size:]
            if candidate and fails(candidate):
                steps = candidate
                chunks = max(chunks - 1, 2)
                break
            if exhausted():
                return steps
        else:
            if size == 1:
                return steps
            chunks = min(chunks * 2, len(steps))
    return steps


# --- the regression test ---------------------------------------------------------------------------------


def write_regression(shrunk: Shrunk, name: str, *, why: str, directory: Path = REGRESSIONS) -> Path:
    """A test module replaying the shrunk schedule, which must pass once the bug is fixed."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"test_{name}.py"
    schedule = shrunk.schedule
    steps = "".join(f"        {step!r},\n" for step in schedule.steps)
    path.write_text(
        f'"""{why}\n\n'
        f"Shrunk from seed {schedule.seed}'s {shrunk.steps_before} steps to {len(schedule.steps)} "
        f"(sim_shrink.py); it failed with:\n    {shrunk.kind}\n"
        f'"""\n\n'
        f"from tests.scenario.broker.sim_shrink import Schedule, Step, replay\n\n"
        f"SCHEDULE = Schedule(\n"
        f"    seed={schedule.seed},\n"
        f"    steps=(\n{steps}    ),\n"
        f"    preamble={schedule.preamble!r},\n"
        f"    heal={schedule.heal!r},\n"
        f")\n\n\n"
        f"def test_the_shrunk_schedule_keeps_the_invariants():\n"
        f"    replay(SCHEDULE, name={path.stem!r})\n"
    )
    return path
