"""The executor walks a plan's steps in order (adapters/plan_executor.py), with fake I/O."""

from concurrent.futures import Future

from controller_story import brokers, cluster, run

from replog.controller.adapters import plan_executor
from replog.controller.adapters.broker_requests import BrokerOutcome
from replog.controller.adapters.zk_writer import WriteStats
from replog.controller.core.events import BrokersChanged, ControlledShutdownRequested
from replog.controller.core.steps import NEW_LEADERS, REQUESTS


class World:
    """Fake writer and sender that log what the executor asks of them."""

    def __init__(self, answered=frozenset()):
        self.log = []
        self.answered = answered  # brokers whose futures are done when started

    def write(self, writes):
        self.log.append(("write", tuple(w.partition for w in writes)))
        return WriteStats(1, len(writes), 0)

    def prepare(self, leader_and_isr=(), update_metadata=()):
        self.log.append(("prepare", tuple(r.broker_id for r in leader_and_isr)))
        done = Future()
        done.set_result({})
        return done

    def start(self, state, leader_and_isr=(), update_metadata=(), stop_replica=(), *, prepared=None):
        self.log.append(("start", tuple(r.broker_id for r in leader_and_isr), prepared is not None,
                         {b: len(u.partitions) for u in update_metadata for b in u.broker_ids}))
        ids = {r.broker_id for r in leader_and_isr} | {b for u in update_metadata for b in u.broker_ids}
        return {b: self._future(b) for b in sorted(ids | {r.broker_id for r in stop_replica})}

    def _future(self, broker_id):
        future = Future()
        if broker_id in self.answered:
            future.set_result(BrokerOutcome(broker_id, True, 0.0))
        else:
            future.result = lambda timeout=None: self._answer(future, broker_id)
        return future

    def _answer(self, future, broker_id):
        self.log.append(("waited for", broker_id))
        return BrokerOutcome(broker_id, True, 0.0)


class Reply:
    def __init__(self, world):
        self.world, self.value = world, None

    def done(self):
        return self.value is not None

    def set_result(self, value):
        self.world.log.append(("answer",))
        self.value = value


def execute(plan, world, state, reply=None):
    def apply_plan():
        world.log.append(("apply",))
        return state
    return plan_executor.execute(plan, world, world, state, apply_plan=apply_plan, reply=reply)


def test_the_first_wave_is_prepared_then_sent_between_the_two_writes(monkeypatch):
    waits = []
    monkeypatch.setattr(plan_executor, "futures_wait", lambda fs, timeout: waits.append(timeout))
    state = cluster(topics={"orders": [(1, 2, 3), (2, 3, 1)]})
    plan, _ = run(state, BrokersChanged(brokers(2, 3)))
    world = World(answered=frozenset({2, 3}))
    outcomes = execute(plan, world, state)
    assert [entry[0] for entry in world.log] == ["prepare", "write", "start", "write", "apply", "start"]
    assert world.log[2][:3] == ("start", (2, 3), True)  # the new leaders, with the protos built meanwhile
    assert waits == [1.0]
    # both brokers took the first wave: the later UpdateMetadata leaves its partition out
    assert world.log[5][3] == {2: 1, 3: 1}
    assert [o.broker_id for o in outcomes] == [2, 3, 2, 3]


def test_a_controlled_shutdown_is_answered_before_the_last_brokers_are_awaited(monkeypatch):
    monkeypatch.setattr(plan_executor, "futures_wait", lambda fs, timeout: None)
    state = cluster(live=(1, 2, 3, 4), topics={"orders": [(1, 2, 3), (1, 3, 4)]})
    plan, _ = run(state, ControlledShutdownRequested(1, 101))
    assert plan.steps[-3].wave == NEW_LEADERS and plan.sends[-1].wave == REQUESTS
    world = World(answered=frozenset({2, 3}))
    reply = Reply(world)
    execute(plan, world, state, reply)
    answered_at = world.log.index(("answer",))
    assert ("waited for", 4) in world.log[answered_at:] and ("waited for", 1) in world.log[answered_at:]
    assert reply.value.remaining == ()
