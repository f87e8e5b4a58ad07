"""Seeded random schedules over the simulated cluster, and what a run of many of them counts.

One seed drives one run (`run_schedule`) of the cluster with the real controllers over
simulated ZooKeeper (sim_zk_cluster.py): produces (plain and idempotent), follower
fetches, clock ticks, ISR checks and resends, the controllers' resyncs, crashes and
power losses, restarts with stale HW checkpoints, fast bounces, brokers cut off
from ZooKeeper and the controllers (zombie leaders, whose sessions expire), the
active controller killed, paused past its session timeout or its session expired,
and the network's faults (sim_network.py: messages delayed, lost, duplicated and
reordered in stormy phases, links cut one way or both). Everything random comes from
the seed's generator, so a seed replays exactly. After every step the cluster checks its invariants (sim_invariants.py,
sim_cluster.py); at the end every fault is healed and the logs must converge to
the leader's.

`fresh_seeds` draws a base seed; a run takes the seeds counting up from it.
A failure names its seed and the command that replays it.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import ReplicaRole
from replog.common.clock import ManualClock
from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_members import REPLICAS, ProduceTicket
from tests.scenario.broker.sim_network import SimNetwork
from tests.scenario.broker.sim_zk_cluster import ZkSimCluster

STEPS = 300
PHASE_STEPS = 50
SEQUENCE_ERRORS = {
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.UNKNOWN_PRODUCER_ID,
    ErrorCode.INVALID_PRODUCER_EPOCH,
}
SEEDS_ENV = "REPLOG_SIM_SEEDS"
# Seeds of one default-suite run, what the suite's 40-minute budget leaves it (docs/testing.md, "The broker
# simulation", gives the measured rates); `make simulate` runs more.
SIM_SEEDS_DEFAULT = 2_000


TEST_FILE = "tests/scenario/broker/test_replication_simulation.py"


def replay_command(seed: int) -> str:
    return f"make simulate SEED={seed}   (or {SEEDS_ENV}={seed} .venv/bin/python -m pytest {TEST_FILE} -q)"


def parse_seeds(spec: str) -> list[int]:
    """A seed list: "1234", "1,5,9" or a range "0-999"."""
    if "-" in spec:
        low, high = spec.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in spec.split(",")]


def fresh_base_seed() -> int:
    return int.from_bytes(os.urandom(4), "big")


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
            assert self.ticket.broker_code not in SEQUENCE_ERRORS, f"current leader {target}: {self.ticket.broker_code}"
        return f"idempotent produce seq {sequence} to {target} (current={current}) -> {self.ticket.broker_code}"


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
    if cluster.network is not None and rng.random() < 0.45:
        delivered = [cluster.deliver_network() for _ in range(rng.randint(1, 3))]
        return "network: " + "; ".join(d for d in delivered if d is not None)
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
    if roll < 0.86 and cluster.network is not None:
        cluster.broadcast()
        return "controller resync"
    if roll < 0.86:
        waiting = [b for b, broker in cluster.brokers.items() if broker.alive and broker.inbox]
        broker_id = rng.choice(waiting or list(REPLICAS))
        return f"deliver to {broker_id}: {cluster.deliver(broker_id)}"
    if cluster.network is not None:
        cluster.resend_pending_proposals()
        return "resend pending proposals"
    if rng.random() < 0.5:
        return f"AlterPartition request: {cluster.deliver_alter_request()}"
    lose = rng.random() < 0.2
    return f"AlterPartition answer (lost={lose}): {cluster.deliver_alter_answer(lose=lose)}"


def fault_step(cluster: SimCluster, rng: random.Random) -> str:
    if cluster.network is not None and rng.random() < 0.3:
        return network_fault(cluster, rng)
    if isinstance(cluster, ZkSimCluster) and rng.random() < 0.35:
        return cluster.controller_fault(rng)
    roll = rng.random()
    power_loss = rng.random() < 0.3
    if roll < 0.25 and len(alive(cluster)) > 1:
        victim = rng.choice(alive(cluster))
        cluster.kill(victim, power_loss=power_loss)
        return f"kill {victim} (power loss={power_loss})"
    if roll < 0.50 and dead(cluster):
        back = rng.choice(dead(cluster))
        stale_hw = rng.randint(0, cluster.broker(back).replica.high_watermark)
        cluster.restart(back, checkpoint_hw=stale_hw)
        return f"restart {back} (checkpoint HW {stale_hw})"
    connected = [b for b in alive(cluster) if not cluster.broker(b).isolated]
    if roll < 0.65 and connected:
        bounced = rng.choice(connected)
        stale_hw = rng.randint(0, cluster.broker(bounced).replica.high_watermark)
        cluster.bounce(bounced, checkpoint_hw=stale_hw, power_loss=power_loss)
        return f"bounce {bounced} (checkpoint HW {stale_hw}, power loss={power_loss})"
    isolated = [b for b in alive(cluster) if cluster.broker(b).isolated]
    if roll < 0.85 and not isolated and len(connected) > 1:
        cut = rng.choice(connected)
        cluster.isolate(cut)
        return f"isolate {cut}"
    if isolated:
        cluster.heal(isolated[0])
        return f"heal {isolated[0]}"
    return "no fault"


def network_fault(cluster: SimCluster, rng: random.Random) -> str:
    """Cut a link one way, or both ways, between two members (controllers, brokers 1-3), or heal all cuts."""
    network = cluster.network
    if network.cut_links and rng.random() < 0.4:
        network.heal()
        return "network healed"
    src, dst = rng.sample((*cluster.controller_ids, *REPLICAS), 2)
    both_ways = rng.random() < 0.5
    network.cut(src, dst, both_ways=both_ways)
    return f"network cut {src}{'<->' if both_ways else '->'}{dst}"


def heal_everything_and_converge(cluster: SimCluster) -> None:
    if cluster.network is not None:
        cluster.network.faulty = False
        cluster.network.heal()
    cluster.heal_controllers()
    for broker_id in REPLICAS:
        broker = cluster.broker(broker_id)
        if broker.alive and broker.isolated:
            cluster.heal(broker_id)
        elif not broker.alive:
            cluster.restart(broker_id)
    for _ in range(60):
        if cluster.network is not None:
            cluster.broadcast()  # the controller's periodic resync: a lost LeaderAndIsr is sent again
        cluster.deliver_all()
        cluster.settle_alter_partition()
        for follower in REPLICAS:
            cluster.fetch(follower)
        cluster.deliver_all()
        cluster.tick(500)
        cluster.check_invariants()
    leader = cluster.leader()
    assert leader.role is ReplicaRole.LEADER, "a leader after healing"
    for broker in cluster.brokers.values():
        assert broker.log.payloads() == leader.log.payloads(), f"broker {broker.broker_id} did not converge"
        assert broker.log.epochs() == leader.log.epochs()
    assert leader.replica.high_watermark == leader.log.log_end_offset, "everything committed once all are in sync"
    assert cluster.controller.isr == REPLICAS, f"ISR healed back to all replicas, is {cluster.controller.isr}"
    assert leader.replica.state.isr == REPLICAS
    assert leader.replica.state.partition_epoch == cluster.controller.partition_epoch


def new_cluster(seed: int, rng: random.Random) -> SimCluster:
    """The cluster a seed runs: over a faulty network, strict min ISR with ELR, durable appends."""
    clock = ManualClock()
    network = SimNetwork(rng, clock)
    return ZkSimCluster(clock, network=network, rng=rng, seed=seed, assign_epoch_on_leadership=seed % 2 == 0,
                        strict_min_isr=True, durable=True)


def run_schedule(seed: int) -> SimCluster:
    rng = random.Random(seed)
    cluster = new_cluster(seed, rng)
    cluster.start()
    producer = IdempotentProducer(producer_id=42)
    recent: list[str] = []
    step = -1
    try:
        for step in range(STEPS):
            stormy = (step // PHASE_STEPS) % 2 == 1  # calm and stormy phases alternate
            if cluster.network is not None:
                cluster.network.faulty = stormy
            cluster.tick(rng.randrange(0, 150))  # time passes between any two events
            recent = (recent + [random_step(cluster, producer, rng, stormy=stormy)])[-12:]
            cluster.check_invariants()
        heal_everything_and_converge(cluster)
    except Exception as failure:
        trail = "\n  ".join(recent)
        events = "\n  ".join(cluster.events[-12:])
        raise AssertionError(
            f"seed={seed} step={step}: {type(failure).__name__}: {failure}\n"
            f"replay: {replay_command(seed)}\n"
            f"last actions:\n  {trail}\nlast cluster events:\n  {events}"
        ) from failure
    return cluster


@dataclass
class RunTotals:
    """What a run of many seeds went through."""

    seeds: int = 0
    failures: int = 0
    first_failure: str = ""
    first_failing_seed: int | None = None
    elapsed_s: float = 0.0
    network_faults: int = 0
    messages: int = 0
    crashes: int = 0
    power_losses: int = 0
    stale_checkpoints: int = 0
    isolations: int = 0
    committed: int = 0
    acked: int = 0
    controllers: int = 0
    zookeeper_expiries: int = 0
    seats_won: int = 0

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
        self.committed += len(cluster.committed)
        self.acked += len(cluster.acked)
        if cluster.network is not None:
            self.network_faults += cluster.network.counts.faults
            self.messages += cluster.network.counts.sent


def run_seeds(seeds, *, stop_at_first_failure: bool = True) -> RunTotals:
    totals = RunTotals()
    started = time.monotonic()
    for seed in seeds:
        totals.seeds += 1
        try:
            totals.add(run_schedule(seed))
        except Exception as failure:  # noqa: BLE001  (a core that raises on a schedule failed it too)
            totals.failures += 1
            if totals.first_failing_seed is None:
                totals.first_failing_seed = seed
                totals.first_failure = str(failure) if isinstance(failure, AssertionError) else repr(failure)
            if stop_at_first_failure:
                break
    totals.elapsed_s = time.monotonic() - started
    return totals
