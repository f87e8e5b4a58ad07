"""Seeded random schedules over the simulated cluster, and what a run of many of them counts.

One seed drives one run (`run_schedule`) of the cluster with the real controllers over
simulated ZooKeeper (sim_zk_cluster.py): produces (plain and idempotent), follower
fetches, clock ticks, ISR checks and resends, the controllers' resyncs, crashes and
power losses (the unsynced tail lost whole or torn), fsync failures (the broker halts), restarts with
stale HW checkpoints, fast bounces, brokers cut off
from ZooKeeper and the controllers (zombie leaders, whose sessions expire), the
active controller killed, paused past its session timeout or its session expired,
and the network's faults (sim_network.py: messages delayed, lost, duplicated and
reordered in stormy phases, links cut one way or both). Everything random comes from the seed's generator, so a seed replays
exactly. After every step the cluster checks its invariants (sim_invariants.py,
sim_cluster.py); at the end every fault is healed and the logs must converge to
the leader's.

`fresh_base_seed` draws a base seed; a run takes the seeds counting up from it
(sim_runs.py runs them). A failure names its seed and the command that replays it.
"""

from __future__ import annotations

import os
import random
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from replog.broker.core.partition import ReplicaRole
from replog.common.clock import ManualClock
from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_consumer import SimConsumer
from tests.scenario.broker.sim_members import REPLICAS
from tests.scenario.broker.sim_network import SimNetwork
from tests.scenario.broker import sim_history
from tests.scenario.broker.sim_producer import FROM_CONTROLLER, SimProducer
from tests.scenario.broker.sim_zk_cluster import ZkSimCluster

if TYPE_CHECKING:
    from tests.scenario.broker.sim_shrink import Recorder

STEPS = 200
HEAL_ROUNDS_MAX = 60
PHASE_STEPS = 50
FSYNC_ERROR_P = 0.15  # of the broker faults a schedule chooses: about one a schedule
SEEDS_ENV = "REPLOG_SIM_SEEDS"
# Seeds of one default-suite run, split across two processes. Schedules of 200 steps (300 before) make room
# for 10,000 of them; every planted bug is still found within a few hundred seeds (docs/testing.md gives the
# figures and the measured rate).
SIM_SEEDS_DEFAULT = 10_000


TEST_FILE = "tests/scenario/broker/test_replication_simulation.py"


def replay_command(seed: int) -> str:
    return f"make simulate SEED={seed}   (or {SEEDS_ENV}={seed} .venv/bin/python -m pytest {TEST_FILE} -q)"


def shrink_command(seed: int) -> str:
    return f"make simulate SEED={seed} SHRINK=1"


def parse_seeds(spec: str) -> list[int]:
    """A seed list: "1234", "1,5,9" or a range "0-999"."""
    if "-" in spec:
        low, high = spec.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in spec.split(",")]


def fresh_base_seed() -> int:
    return int.from_bytes(os.urandom(4), "big")


class SimClients(NamedTuple):
    """The schedule's clients: the idempotent producers (sim_producer.py) and a consumer (sim_consumer.py)."""

    producer: SimProducer
    consumer: SimConsumer


def new_clients(cluster: SimCluster, seed: int) -> SimClients:
    return SimClients(SimProducer(cluster, seed), SimConsumer())


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


# --- one step: chosen from the seed's generator, then performed ------------------------------------------
#
# A step's action is a plain tuple naming what to do and to whom, e.g. ("fetch", 2), ("kill", 3, True),
# ("produce", "x41", -1, 1): everything random about it is drawn when it is chosen, before it runs. A
# recorded schedule (sim_shrink.py) is a list of such actions, and performing them again in a cluster
# whose state differs (some steps removed) still makes sense: an action that no longer applies (kill a
# dead broker) does nothing.

Action = tuple


def choose_action(cluster: SimCluster, rng: random.Random, *, stormy: bool) -> Action:
    roll = rng.random()
    if roll < (0.10 if stormy else 0.01):
        return choose_fault(cluster, rng)
    if cluster.network is not None and rng.random() < 0.45:
        return ("deliver", rng.randint(1, 3))
    roll = rng.random()
    if roll < 0.10:
        acks = rng.choice([1, -1])
        payload = f"x{rng.randrange(10**6)}"
        return ("produce", payload, acks, pick_leader(cluster, rng))
    if roll < 0.16:
        return ("client_send", rng.randint(1, 2), metadata_source(rng))
    if roll < 0.19:
        return ("client_turn", metadata_source(rng))
    if roll < 0.22:
        return ("consume", metadata_source(rng))
    if roll < 0.62:
        followers = [b for b, broker in cluster.brokers.items() if broker.alive and broker.role is ReplicaRole.FOLLOWER]
        return ("fetch", rng.choice(followers or list(REPLICAS)))
    if roll < 0.66:
        return ("tick", rng.randrange(2_000, 12_000))
    if roll < 0.72:
        return ("check_isr",)
    if roll < 0.86 and cluster.network is not None:
        return ("resync",)
    if roll < 0.86:
        waiting = [b for b, broker in cluster.brokers.items() if broker.alive and broker.inbox]
        return ("deliver_to", rng.choice(waiting or list(REPLICAS)))
    if cluster.network is not None:
        return ("resend",)
    if rng.random() < 0.5:
        return ("alter_request",)
    return ("alter_answer", rng.random() < 0.2)


def metadata_source(rng: random.Random) -> int:
    """Where the clients' metadata refreshes read the leader this step: mostly the controller's state,
    sometimes what one broker believes (stale metadata: clients then send to deposed leaders)."""
    return FROM_CONTROLLER if rng.random() < 0.7 else rng.choice(REPLICAS)


def choose_fault(cluster: SimCluster, rng: random.Random) -> Action:
    if cluster.network is not None and rng.random() < 0.3:
        if cluster.network.cut_links and rng.random() < 0.4:
            return ("network_heal",)
        src, dst = rng.sample((*cluster.controller_ids, *REPLICAS), 2)
        return ("network_cut", src, dst, rng.random() < 0.5)
    if isinstance(cluster, ZkSimCluster) and rng.random() < 0.35:
        return cluster.choose_controller_fault(rng)
    if rng.random() < FSYNC_ERROR_P:
        return ("fsync_error", rng.choice(REPLICAS), kept_fraction(rng))
    roll = rng.random()
    power_loss = (kept_fraction(rng),) if rng.random() < 0.3 else ()  # the fraction of its unsynced tail kept
    if roll < 0.25 and len(alive(cluster)) > 1:
        return ("kill", rng.choice(alive(cluster)), bool(power_loss), *power_loss)
    if roll < 0.50 and dead(cluster):
        back = rng.choice(dead(cluster))
        return ("restart", back, rng.randint(0, cluster.broker(back).replica.high_watermark))
    connected = [b for b in alive(cluster) if not cluster.broker(b).isolated]
    if roll < 0.65 and connected:
        bounced = rng.choice(connected)
        high_watermark = cluster.broker(bounced).replica.high_watermark
        return ("bounce", bounced, rng.randint(0, high_watermark), bool(power_loss), *power_loss)
    isolated = [b for b in alive(cluster) if cluster.broker(b).isolated]
    if roll < 0.85 and not isolated and len(connected) > 1:
        return ("isolate", rng.choice(connected))
    if isolated:
        return ("heal", isolated[0])
    return ("nothing",)


def kept_fraction(rng: random.Random) -> float:
    """How much of a disk's unsynced tail a power loss leaves (DiskLog.lose_unsynced): often nothing (0.0),
    else a torn prefix, or all of it."""
    return round(rng.random(), 3)


def perform(cluster: SimCluster, clients: SimClients, action: Action) -> str:
    """Do what `action` names, if it still applies; returns what happened."""
    kind, *args = action
    return _PERFORM[kind](cluster, clients, *args)


def _deliver(cluster: SimCluster, clients: SimClients, count: int) -> str:
    delivered = [cluster.deliver_network() for _ in range(count)]
    said = "network: " + "; ".join(d for d in delivered if d is not None)
    # The sender wakes on an answer (its metadata as it holds it); most deliveries are no client's.
    if "ProduceAnswer" in said and clients.producer.answers_heard():
        said += "; " + clients.producer.turn(FROM_CONTROLLER)
    return said


def _produce(cluster: SimCluster, _producer, payload: str, acks: int, broker_id: int) -> str:
    ticket = cluster.produce(payload, acks=acks, broker_id=broker_id)
    return f"produce acks={acks} -> {ticket.error_code}"


def _client_send(_cluster: SimCluster, clients: SimClients, count: int, source: int) -> str:
    return clients.producer.send(count, source)


def _client_turn(_cluster: SimCluster, clients: SimClients, source: int) -> str:
    return clients.producer.turn(source)


def _consume(cluster: SimCluster, clients: SimClients, source: int) -> str:
    return clients.consumer.consume(cluster, source)


def _tick(cluster: SimCluster, _producer, delta_ms: int) -> str:
    cluster.tick(delta_ms)
    return f"tick {delta_ms}"


def _check_isr(cluster: SimCluster, _producer) -> str:
    for broker_id in alive(cluster):
        cluster.check_isr(broker_id)
    cluster.resend_pending_proposals()
    return "check ISR, resend pending proposals"


def _resync(cluster: SimCluster, _producer) -> str:
    cluster.broadcast()
    return "controller resync"


def _resend(cluster: SimCluster, _producer) -> str:
    cluster.resend_pending_proposals()
    return "resend pending proposals"


def _network_cut(cluster: SimCluster, _producer, src: int, dst: int, both_ways: bool) -> str:
    cluster.network.cut(src, dst, both_ways=both_ways)
    return f"network cut {src}{'<->' if both_ways else '->'}{dst}"


def _network_heal(cluster: SimCluster, _producer) -> str:
    cluster.network.heal()
    return "network healed"


def _kill(cluster: SimCluster, _producer, victim: int, power_loss: bool, kept: float | None = None) -> str:
    """`kept`: the fraction of the unsynced tail a power loss leaves (None, in schedules recorded before
    torn writes: nothing)."""
    if not cluster.broker(victim).alive or len(alive(cluster)) < 2:
        return f"kill {victim}: does not apply"
    cluster.kill(victim, power_loss=power_loss, kept_fraction=kept)
    return f"kill {victim} (power loss={power_loss}, unsynced kept={kept})"


def _restart(cluster: SimCluster, _producer, back: int, checkpoint_hw: int) -> str:
    broker = cluster.broker(back)
    if broker.alive:
        return f"restart {back}: does not apply"
    stale_hw = min(checkpoint_hw, broker.replica.high_watermark)
    cluster.restart(back, checkpoint_hw=stale_hw)
    return f"restart {back} (checkpoint HW {stale_hw})"


def _bounce(cluster: SimCluster, _producer, bounced: int, checkpoint_hw: int, power_loss: bool,
            kept: float | None = None) -> str:
    broker = cluster.broker(bounced)
    if not broker.alive or broker.isolated:
        return f"bounce {bounced}: does not apply"
    stale_hw = min(checkpoint_hw, broker.replica.high_watermark)
    cluster.bounce(bounced, checkpoint_hw=stale_hw, power_loss=power_loss, kept_fraction=kept)
    return f"bounce {bounced} (checkpoint HW {stale_hw}, power loss={power_loss}, unsynced kept={kept})"


def _fsync_error(cluster: SimCluster, _producer, broker_id: int, kept: float) -> str:
    """Arm the broker's disk: its next append's fsync fails, and the halt after it keeps `kept` of the tail."""
    cluster.fail_next_fsync(broker_id, kept)
    return f"the disk of {broker_id} fails its next fsync (unsynced kept={kept})"


def _isolate(cluster: SimCluster, _producer, cut: int) -> str:
    broker = cluster.broker(cut)
    connected = [b for b in alive(cluster) if not cluster.broker(b).isolated]
    if not broker.alive or broker.isolated or len(connected) < 2:
        return f"isolate {cut}: does not apply"
    cluster.isolate(cut)
    return f"isolate {cut}"


def _heal(cluster: SimCluster, _producer, isolated: int) -> str:
    broker = cluster.broker(isolated)
    if not broker.alive or not broker.isolated:
        return f"heal {isolated}: does not apply"
    cluster.heal(isolated)
    return f"heal {isolated}"


_PERFORM = {
    "deliver": _deliver,
    "produce": _produce,
    "client_send": _client_send,
    "client_turn": _client_turn,
    "consume": _consume,
    "fetch": lambda cluster, _producer, follower: f"fetch {follower}: {cluster.fetch(follower)}",
    "tick": _tick,
    "check_isr": _check_isr,
    "resync": _resync,
    "deliver_to": lambda cluster, _producer, broker_id: f"deliver to {broker_id}: {cluster.deliver(broker_id)}",
    "resend": _resend,
    "alter_request": lambda cluster, _producer: f"AlterPartition request: {cluster.deliver_alter_request()}",
    "alter_answer": lambda cluster, _producer, lose: (
        f"AlterPartition answer (lost={lose}): {cluster.deliver_alter_answer(lose=lose)}"),
    "network_cut": _network_cut,
    "network_heal": _network_heal,
    "kill": _kill,
    "restart": _restart,
    "bounce": _bounce,
    "fsync_error": _fsync_error,
    "isolate": _isolate,
    "heal": _heal,
    "controller": lambda cluster, _producer, what, node_id: cluster.controller_fault(what, node_id),
    "nothing": lambda _cluster, _producer: "no fault",
}


def random_step(cluster: SimCluster, clients: SimClients, rng: random.Random, *, stormy: bool) -> str:
    return perform(cluster, clients, choose_action(cluster, rng, stormy=stormy))


def heal_everything_and_converge(cluster: SimCluster) -> None:
    cluster.stop_disk_faults()
    if cluster.network is not None:
        cluster.network.faulty = False
        cluster.network.heal()
    for broker_id in REPLICAS:
        broker = cluster.broker(broker_id)
        if broker.alive and broker.isolated:
            cluster.heal(broker_id)
        elif not broker.alive:
            cluster.restart(broker_id)
    cluster.heal_controllers()
    settled_before = None
    for _ in range(HEAL_ROUNDS_MAX):
        if cluster.network is not None:
            cluster.broadcast()  # the controller's periodic resync: a lost LeaderAndIsr is sent again
        cluster.deliver_all()
        cluster.settle_alter_partition()
        for follower in REPLICAS:
            cluster.fetch(follower)
        cluster.deliver_all()
        cluster.tick(500)
        cluster.check_invariants()
        settled = settled_state(cluster)
        if settled is not None and settled == settled_before:
            break  # a round changed nothing in a converged cluster: every later round would be the same
        settled_before = settled
    leader = cluster.leader()
    assert leader.role is ReplicaRole.LEADER, "a leader after healing"
    for broker in cluster.brokers.values():
        assert broker.log.payloads() == leader.log.payloads(), f"broker {broker.broker_id} did not converge"
        assert broker.log.epochs() == leader.log.epochs()
    assert leader.replica.high_watermark == leader.log.log_end_offset, "everything committed once all are in sync"
    assert cluster.controller.isr == REPLICAS, f"ISR healed back to all replicas, is {cluster.controller.isr}"
    assert leader.replica.state.isr == REPLICAS
    assert leader.replica.state.partition_epoch == cluster.controller.partition_epoch


def settled_state(cluster: SimCluster) -> tuple | None:
    """What the cluster holds once healed, or None while anything may still move.

    Settled: every broker alive and connected, following the controller's leader in its leader
    epoch with the same log, the ISR whole, the HW at the log end everywhere, nothing on the wire,
    no produce waiting in a purgatory and no ISR proposal to resend. Then a heal round sends the same LeaderAndIsr
    (applied as nothing new), fetches nothing and moves no HW: two equal values in a row end the
    rounds early. What they hold is compared, so a round that changed anything runs another."""
    controller = cluster.controller
    if controller.leader not in cluster.brokers or controller.isr != REPLICAS:
        return None
    if cluster.network is not None and cluster.network.in_flight:
        return None
    leader = cluster.broker(controller.leader)
    if leader.role is not ReplicaRole.LEADER or leader.replica.leader is None:
        return None
    if leader.replica.leader.proposal_to_resend is not None or leader.replica.state.isr != REPLICAS:
        return None
    end = leader.log.log_end_offset
    held = []
    for broker in cluster.brokers.values():
        state = broker.replica.state
        if not broker.alive or broker.isolated or broker.inbox or state.leader_epoch != controller.leader_epoch:
            return None
        if len(broker.purgatory):  # a produce still waits (one parked in a bounced process waits forever)
            return None
        if broker.log.log_end_offset != end or broker.replica.high_watermark != end:
            return None
        held.append((broker.incarnation, broker.broker_epoch, state, broker.log.latest_epoch()))
    return (tuple(held), controller.leader_epoch, controller.partition_epoch, controller.elr, len(cluster.committed),
            len(cluster.acked), len(cluster.events))


def new_cluster(seed: int, rng: random.Random) -> SimCluster:
    """The cluster a seed runs: over a faulty network, strict min ISR with ELR, durable appends."""
    clock = ManualClock()
    network = SimNetwork(rng, clock)
    return ZkSimCluster(clock, network=network, rng=rng, seed=seed, assign_epoch_on_leadership=seed % 2 == 0,
                        strict_min_isr=True, durable=True)


def run_schedule(seed: int, *, recorder: Recorder | None = None, steps: int = STEPS) -> SimCluster:
    """Run the seed's schedule of `steps` steps; a `recorder` (sim_shrink.py) keeps its steps and the
    network's draws."""
    rng = random.Random(seed)
    cluster = new_cluster(seed, rng if recorder is None else recorder.watching(rng))
    cluster.start()
    clients = new_clients(cluster, seed)
    recent: deque[str] = deque(maxlen=12)
    step = -1
    try:
        for step in range(steps):
            stormy = (step // PHASE_STEPS) % 2 == 1  # calm and stormy phases alternate
            if cluster.network is not None:
                cluster.network.faulty = stormy
            pause_ms = rng.randrange(0, 150)  # time passes between any two events
            if recorder is not None:
                recorder.begin_step(pause_ms, stormy)
            cluster.tick(pause_ms)
            action = choose_action(cluster, rng, stormy=stormy)
            if recorder is not None:
                recorder.chose(action)
            recent.append(perform(cluster, clients, action))
            cluster.check_invariants()
        if recorder is not None:
            recorder.begin_heal()
        heal_everything_and_converge(cluster)
        clients.consumer.check_against(cluster.leader().log)
        sim_history.judge(cluster, clients.consumer, cluster.leader().log)
    except Exception as failure:
        raise schedule_failure(f"seed={seed} step={step}", replay_command(seed), recent, cluster, failure) from failure
    return cluster


def schedule_failure(where: str, replay: str, recent, cluster: SimCluster, failure: Exception) -> AssertionError:
    """The AssertionError a failed schedule raises: where, what, how to replay it, and the last steps."""
    trail = "\n  ".join(recent)
    events = "\n  ".join(cluster.events[-12:])
    return AssertionError(
        f"{where}: {type(failure).__name__}: {failure}\n"
        f"replay: {replay}\n"
        f"last actions:\n  {trail}\nlast cluster events:\n  {events}"
    )
