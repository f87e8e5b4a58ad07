"""Carries one plan out: walks its steps in order, one small executor per kind.

The core chooses the order (`core/sequencing.py`, the steps in `core/steps.py`);
nothing here decides what goes first. Writes go through the `ZkWriter` (batched,
fenced by the controller epoch), requests through the `BrokerRequestSender`.
A `Send` before `Apply` goes out against the state the controller held when it
decided; its protos are built on a sender thread while the writes ahead of it
are in flight, since the loop only waits for ZooKeeper then.

The steps before `Apply` run in the `controller.zookeeper_write` span and the
rest in `controller.send_requests`, so traces keep the same phases whatever the
order inside them.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Callable

from opentelemetry import trace

from replog.controller.adapters.broker_requests import BrokerOutcome, BrokerRequestSender
from replog.controller.adapters.zk_writer import WriteStats, ZkWriter
from replog.controller.core.model import ControllerState
from replog.controller.core.plan import Plan
from replog.controller.core.sequencing import without_delivered
from replog.controller.core.steps import Answer, Apply, Await, Send, Write

tracer = trace.get_tracer("replog.controller")


def execute(plan: Plan, writer: ZkWriter, sender: BrokerRequestSender, state: ControllerState, *,
            apply_plan: Callable[[], ControllerState], reply: Future | None) -> list[BrokerOutcome]:
    """Carry `plan` out; `apply_plan` makes the next state current and returns it.
    Returns every broker's outcome, once all have answered, in the order sent."""
    return _Execution(writer, sender, state, apply_plan, reply).walk(plan)


class _Execution:
    """One plan being carried out: what its steps have done so far."""

    def __init__(self, writer: ZkWriter, sender: BrokerRequestSender, state: ControllerState,
                 apply_plan: Callable[[], ControllerState], reply: Future | None) -> None:
        self._writer = writer
        self._sender = sender
        self._state = state  # the state requests go out against: the old one until Apply
        self._apply_plan = apply_plan
        self._reply = reply
        self._prepared: dict[str, Future] = {}
        self._waves: dict[str, tuple[Send, dict[int, Future]]] = {}  # wave -> (step, future per broker)
        self._stats = WriteStats(0, 0, 0)
        self._written = 0

    def walk(self, plan: Plan) -> list[BrokerOutcome]:
        applied = plan.steps.index(Apply())
        self._persist(plan.steps[:applied])
        self._run(plan.steps[applied])
        return self._tell(plan.steps[applied + 1:])

    def _persist(self, steps) -> None:
        """The steps before Apply: the writes, and any wave that goes out between them."""
        with tracer.start_as_current_span("controller.zookeeper_write") as span:
            for step in steps:
                if type(step) is Send:
                    self._prepared[step.wave] = self._sender.prepare(step.leader_and_isr, step.update_metadata)
            written_before_send = None
            for step in steps:
                if type(step) is Send and written_before_send is None:
                    written_before_send = self._written
                self._run(step)
            if written_before_send is not None:
                span.set_attribute("first_wave.partitions", written_before_send)
            span.set_attributes({"zookeeper.transactions": self._stats.transactions,
                                 "zookeeper.ops": self._stats.operations, "zookeeper.bytes": self._stats.bytes})

    def _tell(self, steps) -> list[BrokerOutcome]:
        """The steps after Apply; then every broker's outcome, all of them answered by now."""
        with tracer.start_as_current_span("controller.send_requests") as span:
            for step in steps:
                self._run(step)
            outcomes = [f.result() for _, futures in self._waves.values() for f in futures.values()]
            span.set_attribute("brokers", sorted({o.broker_id for o in outcomes}))
        return outcomes

    def _run(self, step) -> None:
        self._EXECUTORS[type(step)](self, step)

    def _write(self, step: Write) -> None:
        self._stats = self._stats + self._writer.write(step.writes)
        self._written += len(step.writes)

    def _apply(self, step: Apply) -> None:
        self._state = self._apply_plan()

    def _send(self, step: Send) -> None:
        update_metadata = step.update_metadata
        if step.omit_delivered_by is not None:
            delivered, futures = self._waves[step.omit_delivered_by]
            took = frozenset(b for b, f in futures.items() if f.done() and f.result().ok)
            update_metadata = without_delivered(update_metadata, delivered.update_metadata, took)
        futures = self._sender.start(self._state, step.leader_and_isr, update_metadata, step.stop_replica,
                                     prepared=self._prepared.pop(step.wave, None))
        self._waves[step.wave] = (step, futures)

    def _await(self, step: Await) -> None:
        waves = self._waves.values() if step.wave is None else (self._waves[step.wave],)
        futures = [f for _, per_broker in waves for broker_id, f in per_broker.items()
                   if step.brokers is None or broker_id in step.brokers]
        if step.bound_s is not None:
            futures_wait(futures, timeout=step.bound_s)
        else:
            for future in futures:
                future.result()

    def _answer(self, step: Answer) -> None:
        if self._reply is not None and not self._reply.done():
            self._reply.set_result(step.reply)

    _EXECUTORS = {Write: _write, Apply: _apply, Send: _send, Await: _await, Answer: _answer}
