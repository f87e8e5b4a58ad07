"""Seeded simulation of the controller core: random events, invariants after every step.

A small cluster (six brokers with differing default min.insync.replicas, a few
topics, each with its own up to its replication factor or none) lives through a
random schedule of broker deaths, returns and restarts (some of them unclean
starts), leaders shrinking and expanding ISRs (and sometimes sending stale
proposals), controlled shutdowns, reassignments and cancellations, elections,
topic creation, growth, deletion, config changes and controller failovers.  The
simulated executor applies every plan, answers StopReplica(delete) (occasionally
with a failure) and feeds follow-ups back.

After every step it checks the state (``invariants.violations``: leader in the
ISR and alive or -1, ISR inside the assignment and never empty, no dead leader
or offline partition while an eligible ISR or ELR member exists, the ELR
inside the assignment and outside the ISR, exact indexes) and
the step itself (leader epochs never go down and rise with every leader change,
each write raises the partition epoch by exactly one, one LeaderAndIsr per
broker, requests only to live brokers, no replica both started and stopped).
A failure names the seed, the step and the recent events; rerun one seed with
``-k "seed_17"``.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque

import pytest

from replog.common.core.partitions import NO_LEADER, TopicPartition
from replog.common.core.placement import assign_replicas_to_brokers
from replog.controller.core import apply, decide
from replog.controller.core.errors import ErrorCode
from replog.controller.core.events import (
    AlterPartitionItem,
    AlterPartitionReceived,
    AutoRebalanceTick,
    BrokersChanged,
    ControlledShutdownRequested,
    PartitionsAdded,
    PreferredElectionRequested,
    ReassignmentRequested,
    Startup,
    TopicConfigChanged,
    TopicDeletionReplicaStopped,
    TopicDeletionRequested,
    TopicsCreated,
    UncleanElectionRequested,
)
from replog.controller.core.invariants import violations
from replog.controller.core.model import (
    BrokerInfo,
    ClusterSnapshot,
    ControllerSettings,
    ControllerState,
    TopicElectionConfig,
)
from replog.controller.core.plan import CreatePartitionState, Plan, SetPartitionState
from replog.controller.core.steps import Answer, Apply, Write

SEEDS = range(40)
STEPS = 150
BROKER_IDS = (1, 2, 3, 4, 5, 6)


class World:
    """The cluster around the controller: brokers that come and go, an executor."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.decide_rng = random.Random(seed + 1_000_000)
        self.registrations = {b: 100 * b for b in BROKER_IDS}
        self.min_isr_defaults = {b: self.rng.choice((1, 2, 2)) for b in BROKER_IDS}  # the brokers' own, differing
        self.live = {b: self._info(b) for b in BROKER_IDS}
        self.queue: deque = deque()
        self.history: deque = deque(maxlen=12)
        self.topic_count = 0
        self.controller_epoch = 1
        self.max_leader_epoch: dict[TopicPartition, int] = {}
        self.state = ControllerState.empty(ControllerSettings(leader_imbalance_check_interval_ms=1000))
        self.now_ms = 0
        self.run(Startup(self.snapshot()))
        for _ in range(3):
            self.run(self.create_topic())

    def _info(self, broker_id: int, unclean_start: bool = False) -> BrokerInfo:
        return BrokerInfo(broker_id, f"broker-{broker_id}", 9090 + broker_id, f"rack-{broker_id % 3}",
                          self.registrations[broker_id], unclean_start=unclean_start,
                          min_insync_replicas_default=self.min_isr_defaults[broker_id])

    def snapshot(self) -> ClusterSnapshot:
        """What ZooKeeper holds now, as a new controller would read it."""
        s = self.state
        return ClusterSnapshot(
            controller_id=1, controller_epoch=self.controller_epoch, live_brokers=dict(self.live),
            assignments=dict(s.assignments), partition_states=dict(s.partition_states),
            topic_configs=dict(s.topic_configs), topics_being_deleted=frozenset(s.topics_being_deleted),
            reassignment_requests=dict(s.reassignments),
        )

    # --- random events -------------------------------------------------------------

    def next_event(self):
        if self.queue:
            return self.queue.popleft()
        choices = [
            (8, self.kill_broker), (8, self.start_broker), (2, self.bounce_broker),
            (25, self.alter_partition), (4, self.controlled_shutdown), (6, self.reassign),
            (2, self.cancel_reassignment), (3, self.preferred_election), (2, self.unclean_election),
            (3, self.rebalance_tick), (3, self.create_topic), (2, self.add_partitions),
            (2, self.delete_topic), (2, self.toggle_unclean), (1, self.failover),
        ]
        total = sum(w for w, _ in choices)
        pick = self.rng.uniform(0, total)
        for weight, make in choices:
            pick -= weight
            if pick <= 0:
                event = make()
                if event is not None:
                    return event
                break
        return self.rebalance_tick()

    def kill_broker(self):
        if not self.live:
            return None
        victim = self.rng.choice(sorted(self.live))
        del self.live[victim]
        return BrokersChanged(dict(self.live))

    def start_broker(self):
        dead = [b for b in BROKER_IDS if b not in self.live]
        if not dead:
            return None
        broker_id = self.rng.choice(dead)
        self.registrations[broker_id] += 1
        self.live[broker_id] = self._info(broker_id, unclean_start=self.rng.random() < 0.3)
        return BrokersChanged(dict(self.live))

    def bounce_broker(self):
        if not self.live:
            return None
        broker_id = self.rng.choice(sorted(self.live))
        self.registrations[broker_id] += 1
        self.live[broker_id] = self._info(broker_id, unclean_start=self.rng.random() < 0.3)
        return BrokersChanged(dict(self.live))

    def _partitions(self):
        return sorted(self.state.assignments)

    def alter_partition(self):
        s = self.state
        led = [tp for tp, st in s.partition_states.items() if st.leader != NO_LEADER]
        if not led:
            return None
        tp = self.rng.choice(sorted(led))
        st = s.partition_states[tp]
        replicas = s.assignments[tp].replicas
        isr = list(st.isr)
        followers = [b for b in isr if b != st.leader]
        outside = [b for b in replicas if b not in isr and b in self.live]
        if outside and (not followers or self.rng.random() < 0.6):
            isr.append(self.rng.choice(outside))  # may be shutting down: then refused
        elif followers:
            isr.remove(self.rng.choice(followers))
        leader_epoch, partition_epoch = st.leader_epoch, st.partition_epoch
        roll = self.rng.random()
        if roll < 0.1:
            partition_epoch -= 1  # a proposal that crossed a controller write
        elif roll < 0.15:
            leader_epoch -= 1  # a deposed leader
        member_epochs = tuple(self.live[b].broker_epoch if b in self.live else 0 for b in isr)  # from its fetches
        item = AlterPartitionItem(tp, leader_epoch, tuple(isr), partition_epoch, member_epochs)
        info = self.live.get(st.leader)
        return AlterPartitionReceived(st.leader, info.broker_epoch if info else 0, (item,))

    def controlled_shutdown(self):
        if not self.live:
            return None
        broker_id = self.rng.choice(sorted(self.live))
        return ControlledShutdownRequested(broker_id, self.live[broker_id].broker_epoch)

    def reassign(self):
        candidates = [tp for tp in self._partitions() if tp.topic not in self.state.topics_being_deleted]
        if not candidates or not self.live:
            return None
        tp = self.rng.choice(candidates)
        size = self.rng.randint(1, min(3, len(self.live)))
        return ReassignmentRequested({tp: tuple(self.rng.sample(sorted(self.live), size))})

    def cancel_reassignment(self):
        running = sorted(self.state.reassignments)
        if not running:
            return None
        return ReassignmentRequested({self.rng.choice(running): None})

    def preferred_election(self):
        partitions = self._partitions()
        if not partitions or self.rng.random() < 0.3:
            return PreferredElectionRequested(None, admin_request="preferred_replica_election")
        return PreferredElectionRequested(tuple(self.rng.sample(partitions, min(3, len(partitions)))))

    def unclean_election(self):
        offline = sorted(tp for tp, st in self.state.partition_states.items() if st.leader == NO_LEADER)
        if not offline:
            return None
        return UncleanElectionRequested((self.rng.choice(offline),))

    def rebalance_tick(self):
        self.now_ms += 1000
        return AutoRebalanceTick(self.now_ms)

    def create_topic(self):
        if not self.live:
            return None
        self.topic_count += 1
        topic = f"topic-{self.topic_count}"
        rf = self.rng.randint(1, min(3, len(self.live)))
        assignment = assign_replicas_to_brokers({b: i.rack for b, i in self.live.items()},
                                                self.rng.randint(1, 4), rf, self.rng)
        own_min_isr = None if self.rng.random() < 0.4 else self.rng.randint(1, rf)  # None: the brokers' default
        config = TopicElectionConfig(min_insync_replicas=own_min_isr, unclean_leader_election=self.rng.random() < 0.3)
        return TopicsCreated({topic: assignment}, {topic: config})

    def add_partitions(self):
        topics = sorted(t for t in self.state.partitions_by_topic if t not in self.state.topics_being_deleted)
        if not topics or not self.live:
            return None
        topic = self.rng.choice(topics)
        known = self.state.partitions_by_topic[topic]
        rf = len(self.state.assignments[TopicPartition(topic, known[0])].replicas)
        if rf > len(self.live):
            return None
        new = assign_replicas_to_brokers({b: None for b in self.live}, 2, rf, self.rng,
                                         start_partition_id=len(known))
        full = {p: self.state.assignments[TopicPartition(topic, p)].replicas for p in known}
        full.update(new)
        return PartitionsAdded(topic, full)

    def delete_topic(self):
        topics = sorted(self.state.partitions_by_topic)
        if not topics:
            return None
        return TopicDeletionRequested((self.rng.choice(topics),))

    def toggle_unclean(self):
        topics = sorted(self.state.partitions_by_topic)
        if not topics:
            return None
        topic = self.rng.choice(topics)
        config = self.state.config_of(topic)
        return TopicConfigChanged(topic, dataclasses.replace(
            config, unclean_leader_election=not config.unclean_leader_election))

    def failover(self):
        self.controller_epoch += 1
        self.queue.clear()  # the old controller's pending work dies with it
        return Startup(self.snapshot())

    # --- executing ------------------------------------------------------------------

    def run(self, event) -> Plan:
        before = self.state
        frozen = repr(before)
        plan = decide(before, event, self.decide_rng)
        assert repr(before) == frozen, "decide() changed the state"
        check_plan(before, plan, event)
        if len(plan.zk_writes) >= 2 and self.rng.random() < 0.05:
            return self.fail_some_writes_and_reload(before, plan)
        self.state = apply(before, plan)
        check_step(self, before, self.state)
        for follow_up in plan.follow_ups:
            self.queue.append(follow_up)
        for request in plan.stop_replica:
            deleted = tuple(p.partition for p in request.partitions if p.delete)
            if deleted:
                failed = tuple(tp for tp in deleted if self.rng.random() < 0.1)
                stopped = tuple(tp for tp in deleted if tp not in failed)
                self.queue.append(TopicDeletionReplicaStopped(request.broker_id, stopped, failed))
        return plan


    def fail_some_writes_and_reload(self, before: ControllerState, plan: Plan) -> Plan:
        """One ``multi`` of the plan fails while the others land; the executor
        then reloads, as a new controller would (the adapter's ZkWriteError path)."""
        start = self.rng.randrange(len(plan.zk_writes))
        failed = plan.zk_writes[start:start + self.rng.randint(1, 2)]
        landed = tuple(w for w in plan.zk_writes if w not in failed)
        self.state = apply(before, dataclasses.replace(plan, steps=(Write(landed), Apply(), Answer())))  # ZooKeeper now
        self.history.append(f"(writes failed: {failed!r})")
        return self.failover_now()

    def failover_now(self) -> Plan:
        event = self.failover()
        self.history.append(event)
        return self.run(event)


def check_plan(before: ControllerState, plan: Plan, event) -> None:
    live_after = before.live_brokers
    for update in plan.state_updates:
        if hasattr(update, "live"):
            live_after = update.live
        if hasattr(update, "state") and isinstance(update.state, ControllerState):
            before = update.state
            live_after = update.state.live_brokers
    for send in plan.sends:
        broker_ids = [r.broker_id for r in send.leader_and_isr]
        assert len(broker_ids) == len(set(broker_ids)), "two LeaderAndIsr requests to one broker"
    broker_ids = [r.broker_id for r in plan.leader_and_isr]
    assert len({r.broker_id for r in plan.stop_replica}) == len(plan.stop_replica)
    started = {(d.partition, r.broker_id) for r in plan.leader_and_isr for d in r.partitions}
    stopped = {(p.partition, r.broker_id) for r in plan.stop_replica for p in r.partitions}
    assert not started & stopped, f"replicas both started and stopped: {started & stopped}"
    for broker_id in (*broker_ids, *(r.broker_id for r in plan.stop_replica)):
        assert broker_id in live_after, f"request to dead broker {broker_id}"
    written = set()
    for write in plan.zk_writes:
        if isinstance(write, (SetPartitionState, CreatePartitionState)):
            assert write.partition not in written, f"{write.partition} written twice in one plan"
            written.add(write.partition)
        if isinstance(write, SetPartitionState):
            current = before.partition_states[write.partition]
            assert write.expected_partition_epoch == current.partition_epoch
            assert write.state.partition_epoch == current.partition_epoch + 1
        if isinstance(write, CreatePartitionState):
            assert write.partition not in before.partition_states
            assert write.state.partition_epoch == 0
    if isinstance(event, AlterPartitionReceived) and plan.reply.error is ErrorCode.NONE:
        for result in plan.reply.results:
            if result.error is ErrorCode.NONE:
                assert set(result.state.isr) == set(event.items[0].new_isr)


def check_step(world: World, before: ControllerState, after: ControllerState) -> None:
    problems = violations(after)
    assert not problems, problems
    for tp in list(world.max_leader_epoch):
        if tp not in after.partition_states:
            del world.max_leader_epoch[tp]  # deleted; a new topic may reuse the name
    for tp, state in after.partition_states.items():
        seen = world.max_leader_epoch.get(tp, -1)
        assert state.leader_epoch >= seen, f"{tp}: leader epoch went back from {seen} to {state.leader_epoch}"
        world.max_leader_epoch[tp] = state.leader_epoch
        old = before.partition_states.get(tp)
        if old is not None and old.leader != state.leader and before.controller_epoch == after.controller_epoch:
            assert state.leader_epoch > old.leader_epoch, f"{tp}: leader changed without a new leader epoch"


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}")
def test_random_schedules_keep_every_invariant(seed):
    world = World(seed)
    for step in range(STEPS):
        event = world.next_event()
        world.history.append(event)
        try:
            world.run(event)
        except AssertionError as failure:
            recent = "\n  ".join(str(e)[:300] for e in world.history)
            raise AssertionError(
                f"seed={seed} step={step}: {failure}\nrecent events:\n  {recent}"
            ) from failure


def test_the_schedules_exercise_every_behaviour():
    """Guards the simulation itself: weights that stop producing an outcome fail here."""
    seen: set[str] = set()
    for seed in range(6):
        world = World(seed)
        for _ in range(STEPS):
            event = world.next_event()
            states_before = world.state.partition_states
            plan = world.run(event)
            seen.add(type(event).__name__)
            if plan.metrics.partitions_moved:
                seen.add("reassignment completed")
            if plan.metrics.unclean_leader_elections:
                seen.add("unclean election")
            if plan.metrics.offline_partitions:
                seen.add("offline partition")
            if any(type(w).__name__ == "DeleteTopicZnodes" for w in plan.zk_writes):
                seen.add("topic deleted")
            for write in plan.zk_writes:
                if isinstance(write, SetPartitionState):
                    if write.state.elr:
                        seen.add("ELR kept")
                    old = states_before.get(write.partition)
                    if old is not None and write.state.leader in old.elr:
                        seen.add("leader from the ELR")
            if isinstance(plan.reply, type(None)) or not hasattr(plan.reply, "results"):
                continue
            seen.update(f"reply {r.error.name}" for r in plan.reply.results)
    expected = {
        "BrokersChanged", "AlterPartitionReceived", "ControlledShutdownRequested", "ReassignmentRequested",
        "IsrChanged", "Startup", "TopicDeletionReplicaStopped", "reassignment completed", "unclean election",
        "offline partition", "topic deleted", "reply NONE", "reply INVALID_UPDATE_VERSION",
        "reply FENCED_LEADER_EPOCH", "reply INELIGIBLE_REPLICA", "ELR kept", "leader from the ELR",
    }
    assert expected <= seen, expected - seen
