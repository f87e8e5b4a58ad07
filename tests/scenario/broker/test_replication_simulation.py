"""Seeded random schedules over the simulated cluster, checking invariants at every step.

Each seed drives one run: produces (plain and idempotent), follower fetches,
clock ticks, ISR checks, delayed controller messages and AlterPartition
answers, crashes, restarts with stale HW checkpoints, fast bounces, and
brokers cut off from the controller (zombie leaders). After every step the
cluster checks: one leader per leader epoch, published HW never goes back,
nothing below any replica's HW differs from what was committed, ISR members
hold every committed record, every acks=-1 acknowledgement is committed, no
idempotent batch is committed twice. At the end every fault is healed and the
logs must converge to the leader's.

A failure names its seed. Replay one with REPLOG_SIM_SEEDS=1234 (or a range,
REPLOG_SIM_SEEDS=0-999, for a longer soak).
"""

from __future__ import annotations

import os
import random

import pytest

from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import ReplicaRole
from replog.common.clock import ManualClock
from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_members import REPLICAS, ProduceTicket

STEPS = 300
PHASE_STEPS = 50
DEFAULT_SEEDS = range(30)
SEQUENCE_ERRORS = {
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.UNKNOWN_PRODUCER_ID,
    ErrorCode.INVALID_PRODUCER_EPOCH,
}


def seeds() -> list[int]:
    spec = os.environ.get("REPLOG_SIM_SEEDS")
    if not spec:
        return list(DEFAULT_SEEDS)
    if "-" in spec:
        low, high = spec.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in spec.split(",")]


class IdempotentProducer:
    """One batch in flight; retries the same sequence until it is acknowledged.

    A zombie leader (isolated, or not yet told of a newer epoch) may not know
    sequences committed after it lost its seat and answer with a sequence
    error; that is a refusal, not data loss. The current leader must never.
    """

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id
        self.next_sequence = 0
        self.ticket: ProduceTicket | None = None

    def step(self, cluster: SimCluster, rng: random.Random) -> str:
        if self.ticket is not None and not self.ticket.done:
            return "producer waiting"
        if self.ticket is not None and self.ticket.ok:
            self.next_sequence += 1
        sequence = self.next_sequence
        target = pick_leader(cluster, rng)
        current = is_current_leader(cluster, target)
        self.ticket = cluster.produce(
            f"p{self.producer_id}-{sequence}", broker_id=target, producer_id=self.producer_id, sequence=sequence
        )
        if current:
            assert self.ticket.error_code not in SEQUENCE_ERRORS, f"current leader {target}: {self.ticket.error_code}"
        return f"idempotent produce seq {sequence} to {target} (current={current}) -> {self.ticket.error_code}"


def is_current_leader(cluster: SimCluster, broker_id: int) -> bool:
    broker = cluster.broker(broker_id)
    return (
        broker.alive
        and not broker.isolated
        and broker.role is ReplicaRole.LEADER
        and broker.leader_epoch == cluster.controller.leader_epoch
    )


def pick_leader(cluster: SimCluster, rng: random.Random) -> int:
    """Clients with stale metadata: any live broker that believes it leads, else the controller's choice."""
    believers = [b for b, broker in cluster.brokers.items() if broker.alive and broker.role is ReplicaRole.LEADER]
    if believers:
        return rng.choice(believers)
    return cluster.controller.leader if cluster.controller.leader != -1 else rng.choice(REPLICAS)


def alive(cluster: SimCluster) -> list[int]:
    return [b for b, broker in cluster.brokers.items() if broker.alive]


def dead(cluster: SimCluster) -> list[int]:
    return [b for b, broker in cluster.brokers.items() if not broker.alive]


def random_step(cluster: SimCluster, producer: IdempotentProducer, rng: random.Random, *, stormy: bool) -> str:
    roll = rng.random()
    if roll < (0.10 if stormy else 0.01):
        return fault_step(cluster, rng)
    roll = rng.random()
    if roll < 0.12:
        acks = rng.choice([1, -1])
        ticket = cluster.produce(f"x{rng.randrange(10**6)}", acks=acks, broker_id=pick_leader(cluster, rng))
        return f"produce acks={acks} -> {ticket.error_code}"
    if roll < 0.22:
        return producer.step(cluster, rng)
    if roll < 0.62:
        followers = [b for b, broker in cluster.brokers.items() if broker.alive and broker.role is ReplicaRole.FOLLOWER]
        follower = rng.choice(followers or list(REPLICAS))
        return f"fetch {follower}: {cluster.fetch(follower)}"
    if roll < 0.66:
        delta = rng.randrange(2_000, 12_000)
        cluster.tick(delta)
        return f"tick {delta}"
    if roll < 0.72:
        for broker_id in alive(cluster):
            cluster.check_isr(broker_id)
        cluster.resend_pending_proposals()
        return "check ISR, resend pending proposals"
    if roll < 0.86:
        waiting = [b for b, broker in cluster.brokers.items() if broker.alive and broker.inbox]
        broker_id = rng.choice(waiting or list(REPLICAS))
        return f"deliver to {broker_id}: {cluster.deliver(broker_id)}"
    if rng.random() < 0.5:
        return f"AlterPartition request: {cluster.deliver_alter_request()}"
    lose = rng.random() < 0.2
    return f"AlterPartition answer (lost={lose}): {cluster.deliver_alter_answer(lose=lose)}"


def fault_step(cluster: SimCluster, rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.25 and len(alive(cluster)) > 1:
        victim = rng.choice(alive(cluster))
        cluster.kill(victim)
        return f"kill {victim}"
    if roll < 0.50 and dead(cluster):
        back = rng.choice(dead(cluster))
        stale_hw = rng.randint(0, cluster.broker(back).replica.high_watermark)
        cluster.restart(back, checkpoint_hw=stale_hw)
        return f"restart {back} (checkpoint HW {stale_hw})"
    connected = [b for b in alive(cluster) if not cluster.broker(b).isolated]
    if roll < 0.65 and connected:
        bounced = rng.choice(connected)
        stale_hw = rng.randint(0, cluster.broker(bounced).replica.high_watermark)
        cluster.bounce(bounced, checkpoint_hw=stale_hw)
        return f"bounce {bounced} (checkpoint HW {stale_hw})"
    isolated = [b for b in alive(cluster) if cluster.broker(b).isolated]
    if roll < 0.85 and not isolated and len(connected) > 1:
        cut = rng.choice(connected)
        cluster.isolate(cut)
        return f"isolate {cut}"
    if isolated:
        cluster.heal(isolated[0])
        return f"heal {isolated[0]}"
    return "no fault"


def heal_everything_and_converge(cluster: SimCluster) -> None:
    for broker_id in REPLICAS:
        broker = cluster.broker(broker_id)
        if broker.alive and broker.isolated:
            cluster.heal(broker_id)
        elif not broker.alive:
            cluster.restart(broker_id)
    for _ in range(60):
        cluster.deliver_all()
        cluster.settle_alter_partition()
        for follower in REPLICAS:
            cluster.fetch(follower)
        cluster.tick(500)
        cluster.check_invariants()
    leader = cluster.leader()
    assert leader.role is ReplicaRole.LEADER, "a leader after healing"
    for broker in cluster.brokers.values():
        assert broker.log.payloads() == leader.log.payloads(), f"broker {broker.broker_id} did not converge"
        assert broker.log.epochs() == leader.log.epochs()
    assert leader.replica.high_watermark == leader.log.log_end_offset, "everything committed once all are in sync"
    assert cluster.controller.isr == REPLICAS, f"ISR healed back to all replicas, is {cluster.controller.isr}"
    assert leader.replica.state.isr == REPLICAS and leader.replica.state.partition_epoch == cluster.controller.partition_epoch


def run_schedule(seed: int) -> SimCluster:
    rng = random.Random(seed)
    cluster = SimCluster(ManualClock(), assign_epoch_on_leadership=seed % 2 == 0)
    cluster.start()
    producer = IdempotentProducer(producer_id=42)
    recent: list[str] = []
    step = -1
    try:
        for step in range(STEPS):
            stormy = (step // PHASE_STEPS) % 2 == 1  # calm and stormy phases alternate
            cluster.tick(rng.randrange(0, 150))  # time passes between any two events
            recent = (recent + [random_step(cluster, producer, rng, stormy=stormy)])[-12:]
            cluster.check_invariants()
        heal_everything_and_converge(cluster)
    except AssertionError as failure:
        trail = "\n  ".join(recent)
        events = "\n  ".join(cluster.events[-12:])
        raise AssertionError(
            f"seed={seed} step={step}: {failure}\n"
            f"replay: REPLOG_SIM_SEEDS={seed} pytest {__file__}\n"
            f"last actions:\n  {trail}\nlast cluster events:\n  {events}"
        ) from failure
    return cluster


@pytest.mark.parametrize("seed", seeds())
def test_random_schedule_keeps_the_invariants(seed):
    run_schedule(seed)


def test_schedules_do_real_work():
    """Guard against a simulation that passes by doing nothing."""
    runs = [run_schedule(seed) for seed in range(5)]
    assert sum(len(c.committed) for c in runs) > 50
    assert sum(len(c.acked) for c in runs) > 10
    assert sum(1 for c in runs for e in c.events if "truncated" in e) > 0
    assert sum(len(c.leaders_by_epoch) for c in runs) > 10
