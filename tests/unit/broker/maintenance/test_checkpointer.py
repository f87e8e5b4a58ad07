"""The checkpointer steps aside while the controller's requests keep coming, but not for long."""

from __future__ import annotations

from replog.broker.maintenance.checkpointer import BURST_DEFER_MAX_MS, BURST_QUIET_MS, Checkpointer, ControlBursts
from replog.common.clock import ManualClock


class Replicas:
    """A ReplicaManager stand-in that counts checkpoints."""

    def __init__(self) -> None:
        self.checkpoints = 0

    def take_created(self) -> int:
        return 0

    def sync_rolled_segments(self) -> None:
        pass

    def flush_due(self) -> None:
        pass

    def write_checkpoints(self, *, flush_if_due: bool) -> None:
        self.checkpoints += 1


def checkpointer(clock: ManualClock, bursts: ControlBursts, chores: list) -> tuple[Checkpointer, Replicas]:
    replicas = Replicas()
    return Checkpointer(replicas, clock, checkpoint_interval_ms=1_000, flush_check_interval_ms=1_000,
                        interval_flush=False, chores=(lambda: chores.append(clock.monotonic_ms()),),
                        bursts=bursts), replicas


def test_rounds_wait_while_the_controller_sends_and_run_at_the_first_tick_after():
    clock = ManualClock()
    bursts = ControlBursts(clock)
    chores: list[int] = []
    ticker, replicas = checkpointer(clock, bursts, chores)
    clock.advance(1_000)
    bursts.note()  # a LeaderAndIsr arrives as the checkpoint falls due
    ticker._round()
    clock.advance(BURST_QUIET_MS - 1)
    ticker._round()
    assert replicas.checkpoints == 0 and chores == []
    clock.advance(1)  # the controller has been quiet long enough
    ticker._round()
    assert replicas.checkpoints == 1 and len(chores) == 1


def test_a_burst_that_does_not_end_delays_a_round_by_the_cap_at_most():
    clock = ManualClock()
    bursts = ControlBursts(clock)
    chores: list[int] = []
    ticker, replicas = checkpointer(clock, bursts, chores)
    started = clock.monotonic_ms()
    while not chores:
        clock.advance(500)
        bursts.note()
        ticker._round()
    assert chores[0] - started <= BURST_DEFER_MAX_MS + 500 and replicas.checkpoints == 1
    clock.advance(500)
    bursts.note()
    ticker._round()  # the next round may wait again
    assert len(chores) == 1


def test_without_requests_from_the_controller_rounds_never_wait():
    clock = ManualClock()
    chores: list[int] = []
    ticker, replicas = checkpointer(clock, ControlBursts(clock), chores)
    clock.advance(1_000)
    ticker._round()
    assert replicas.checkpoints == 1 and len(chores) == 1
