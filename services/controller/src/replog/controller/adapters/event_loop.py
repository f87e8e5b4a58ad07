"""The controller's single event loop (one thread, one queue; docs/architecture.md, "Control flow").

One thread drains one bounded queue of frozen events. For each event it calls
the pure `decide(state, event, rng)` and has the plan's steps carried out in the
order the core chose (`plan_executor.py`: ZooKeeper writes fenced by the
controller epoch, `apply` to the in-memory state, broker requests, the reply to
the RPC that caused the event); then it puts follow-up events back onto the
queue and schedules resyncs for brokers a request did not reach. Watches and
RPC handlers only enqueue. No locks guard the state: only this thread touches it.

Seat changes bump a generation number. Events enqueued under an older
generation are answered NOT_CONTROLLER and dropped, so a controller that lost
its seat stops acting at once; its in-flight ZooKeeper writes fail on the epoch
check and brokers refuse its requests by controller epoch.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

from opentelemetry import trace

from replog.common import gc_policy
from replog.common.channels import ChannelCache
from replog.common.security.files import TlsFiles
from replog.common.zk.client import ZkClient
from replog.controller.adapters import metrics
from replog.controller.adapters.broker_requests import BrokerRequestSender
from replog.controller.adapters.event_report import describe, record_metrics
from replog.controller.adapters.loader import load_snapshot
from replog.controller.adapters.plan_executor import execute
from replog.controller.adapters.seat import Seat
from replog.controller.adapters.standby_mirror import StandbyMirror
from replog.controller.adapters.watches import Watches
from replog.controller.adapters.zk_writer import SeatLostError, ZkWriteError, ZkWriter
from replog.controller.core import events as ev
from replog.controller.core.apply import apply
from replog.controller.core.decide import decide
from replog.controller.core.model import ControllerSettings, ControllerState
from replog.controller.core.plan import Plan

log = logging.getLogger(__name__)
tracer = trace.get_tracer("replog.controller")

RESYNC_DELAY_S = 1.0  # after a request to a broker failed in transit; doubled while it keeps failing
RESYNC_DELAY_MAX_S = 30.0
FREEZE_AFTER_WRITES = 1_000  # a plan writing this many znodes leaves long-lived state: freeze it (gc_policy)

SPAN_NAMES = {
    "Startup": "controller.failover",
    "BrokersChanged": "controller.broker_change",
    "BrokerResyncRequested": "controller.broker_resync",
    "TopicsCreated": "controller.topic_change",
    "PartitionsAdded": "controller.partition_modification",
    "TopicDeletionRequested": "controller.topic_deletion",
    "TopicDeletionReplicaStopped": "controller.topic_deletion_progress",
    "ReassignmentRequested": "controller.reassignment",
    "IsrChanged": "controller.isr_change",
    "AlterPartitionReceived": "controller.alter_partition",
    "ControlledShutdownRequested": "controller.controlled_shutdown",
    "LogDirsOfflineReported": "controller.log_dirs_offline",
    "PreferredElectionRequested": "controller.preferred_election",
    "UncleanElectionRequested": "controller.unclean_election",
    "AutoRebalanceTick": "controller.auto_rebalance",
    "TopicConfigChanged": "controller.topic_config_change",
}


@dataclass(frozen=True)
class _TakeSeat:
    seat: Seat
    generation: int
    won_ns: int = 0  # wall clock when the seat was won (time.time_ns)


@dataclass(frozen=True)
class _Queued:
    event: object
    generation: int
    enqueued_ns: int
    reply: Future | None = None
    notice_ms: int = 0
    links: tuple = ()  # spans of the caller (e.g. a leader's ISR change) this event's span links to


class NotController(Exception):
    pass


class ControllerLoop:
    def __init__(self, zk: ZkClient, controller_id: int, settings: ControllerSettings, *,
                 queue_size_max: int, session_timeout_ms: int, give_up: Callable[[str], None],
                 rng: random.Random | None = None, tls: TlsFiles | None = None) -> None:
        self._give_up = give_up
        self._zk = zk
        self._controller_id = controller_id
        self._settings = settings
        self._session_timeout_ms = session_timeout_ms
        self._rng = rng or random.Random()
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size_max)
        self._generation = 0
        self._seat: Seat | None = None
        self._state = ControllerState.empty(settings)
        self._writer: ZkWriter | None = None
        self._sender: BrokerRequestSender | None = None
        self._watches: Watches | None = None
        self._mirror: StandbyMirror | None = None
        self._mirror_lock = threading.Lock()
        self._resync_lock = threading.Lock()  # _resyncs is also touched by the resync timers
        self._resyncs: set[int] = set()  # brokers with a resync scheduled
        self._resync_delays: dict[int, float] = {}  # the last wait before a resync, per failing broker
        self._channels = ChannelCache(tls)  # to the brokers, with the controller's certificate
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="controller-loop", daemon=True)
        self._ticker = threading.Thread(target=self._tick, name="controller-ticker", daemon=True)

    # --- outside threads -----------------------------------------------------------------

    def start(self) -> None:
        self._start_mirror()
        self._thread.start()
        self._ticker.start()

    def stop(self) -> None:
        self._stopped.set()
        self._close_mirror()
        self._generation += 1
        self._seat = None
        # Answer queued RPCs at once (NOT_CONTROLLER: the caller retries elsewhere)
        # rather than letting them wait out their deadline on a process going away.
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Queued) and item.reply is not None and not item.reply.done():
                item.reply.set_exception(NotController())
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._channels.close()

    @property
    def active(self) -> bool:
        return self._seat is not None

    @property
    def controller_epoch(self) -> int:
        return self._seat.controller_epoch if self._seat else 0

    def on_elected(self, seat: Seat) -> None:
        self._generation += 1
        self._seat = seat
        metrics.ACTIVE.set(1)
        self._queue.put(_TakeSeat(seat, self._generation, time.time_ns()))

    def on_resigned(self) -> None:
        # Stop acting at once: every queued or in-flight event of the old generation is dropped.
        self._generation += 1
        self._seat = None
        metrics.ACTIVE.set(0)
        if not self._stopped.is_set():
            self._start_mirror()  # a standby again: keep a copy for the next take-over

    def _start_mirror(self) -> None:
        with self._mirror_lock:
            if self._mirror is None:
                self._mirror = StandbyMirror(self._zk.endpoint,
                                             session_timeout_s=self._session_timeout_ms / 1000)
                self._mirror.start()

    def _close_mirror(self) -> None:
        with self._mirror_lock:
            mirror, self._mirror = self._mirror, None
        if mirror is not None:
            mirror.close()

    def enqueue(self, event, *, generation: int | None = None, reply: Future | None = None,
                notice_ms: int = 0, links: tuple = ()) -> bool:
        """Queue an event for the current seat; False when not active or the queue is full."""
        generation = self._generation if generation is None else generation
        if self._seat is None or generation != self._generation:
            return False
        try:
            self._queue.put_nowait(_Queued(event, generation, time.monotonic_ns(), reply, notice_ms, links))
        except queue.Full:
            log.error("controller event queue is full (%d); dropping %s", self._queue.maxsize,
                      type(event).__name__)
            return False
        metrics.EVENT_QUEUE_SIZE.set(self._queue.qsize())
        return True

    def call(self, event, timeout_s: float = 30.0, links: tuple = ()):
        """Enqueue an RPC-driven event and wait for the plan's reply."""
        future: Future = Future()
        if not self.enqueue(event, reply=future, links=links):
            raise NotController()
        return future.result(timeout=timeout_s)

    def _tick(self) -> None:
        interval_s = self._settings.leader_imbalance_check_interval_ms / 1000
        while not self._stopped.wait(interval_s):
            if self._settings.auto_leader_rebalance_enable and self.active:
                self.enqueue(ev.AutoRebalanceTick(int(time.time() * 1000)))

    # --- the loop thread -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopped.is_set():
            item = self._queue.get()
            metrics.EVENT_QUEUE_SIZE.set(self._queue.qsize())
            if item is None:
                continue
            try:
                if isinstance(item, _TakeSeat):
                    self._take_seat(item)
                else:
                    self._process(item)
            except Exception:  # noqa: BLE001 - the loop must survive; the seat is given up
                log.exception("controller loop failed; giving up the seat")
                self._give_up_seat("internal error")

    def _take_seat(self, item: _TakeSeat) -> None:
        if item.generation != self._generation:
            return
        seat = item.seat
        started = time.monotonic()
        if self._sender:
            self._sender.close()
        if self._watches:
            self._watches.close()
        self._writer = ZkWriter(self._zk, self._controller_id, seat.controller_epoch, seat.controller_epoch_zk_version)
        self._sender = BrokerRequestSender(self._channels, self._controller_id, seat.controller_epoch)
        with tracer.start_as_current_span("controller.failover", attributes={
            "controller.id": self._controller_id, "controller.epoch": seat.controller_epoch,
            "zookeeper.session_timeout_ms": self._session_timeout_ms,
            "controller.seat_won_at_ns": item.won_ns,
        }) as span:
            with self._mirror_lock:
                mirror, self._mirror = self._mirror, None
            # Watches first, so no change after the snapshot is missed; their first
            # firings queue behind this Startup and decide nothing new.
            with tracer.start_as_current_span("controller.watch"):
                self._watches = Watches(self._zk, lambda event, **kw: self.enqueue(event, generation=item.generation,
                                                                                   **kw),
                                        known_topics=mirror.topics() if mirror else frozenset())
                self._watches.start()
            with tracer.start_as_current_span("controller.load_state") as load_span:
                snapshot = mirror.take(self._controller_id, seat.controller_epoch) if mirror else None
                if mirror is not None:
                    mirror.close()
                load_span.set_attribute("controller.standby_copy", snapshot is not None)
                if snapshot is None:
                    snapshot = load_snapshot(self._zk.endpoint, self._controller_id, seat.controller_epoch)
            span.set_attribute("partitions", len(snapshot.assignments))
            span.set_attribute("brokers", sorted(snapshot.live_brokers))
            self._execute(ev.Startup(snapshot), item.generation, None, span)
        log.info("controller %d active (epoch %d) after %.2f s", self._controller_id, seat.controller_epoch,
                 time.monotonic() - started)

    def _process(self, item: _Queued) -> None:
        if item.generation != self._generation or self._seat is None:
            if item.reply is not None and not item.reply.done():
                item.reply.set_exception(NotController())
            return
        queued_ms = (time.monotonic_ns() - item.enqueued_ns) / 1e6
        metrics.EVENT_QUEUE_WAIT_S.observe(queued_ms / 1000)
        name = type(item.event).__name__
        attributes = {"controller.epoch": self.controller_epoch, "event.queue_time_ms": queued_ms}
        if item.notice_ms:
            attributes["controller.noticed_at_ms"] = item.notice_ms
            attributes["zookeeper.session_timeout_ms"] = self._session_timeout_ms
        with tracer.start_as_current_span(SPAN_NAMES.get(name, f"controller.{name}"), attributes=attributes,
                                          links=[trace.Link(c) for c in item.links]) as span:
            self._execute(item.event, item.generation, item.reply, span)

    def _execute(self, event, generation: int, reply: Future | None, span) -> None:
        # The collector waits for the whole event, not only decide(): the core builds no
        # reference cycles, and a collection mid-event holds up the new leaderships on the
        # failover's critical path. A large plan's survivors (the new partition states, which
        # live until the next change) are then frozen, so later full collections do not scan
        # them again; states it replaces are still freed by reference counting
        # (docs/perf/gc-freeze.md).
        with gc_policy.paused() as pause:
            self._run_event(event, generation, reply, span, pause)

    def _run_event(self, event, generation: int, reply: Future | None, span, pause: gc_policy.Pause) -> None:
        started = time.monotonic()
        try:
            with tracer.start_as_current_span("controller.decide"):
                plan = decide(self._state, event, self._rng)
            if len(plan.zk_writes) >= FREEZE_AFTER_WRITES:
                pause.freeze_on_exit()
            describe(span, self._state, event, plan)
            if generation != self._generation:
                raise NotController()
            outcomes = execute(plan, self._writer, self._sender, self._state, reply=reply,
                               apply_plan=lambda: self._apply(event, plan, started))
            # What this event caused runs as events of its own, in traces of their own: each links back
            # to this event's span, so a failover's trace leads to the resyncs and follow-ups it set off.
            caused_by = (span.get_span_context(),)
            for follow_up in plan.follow_ups:
                self.enqueue(follow_up, generation=generation, links=caused_by)
            for outcome in outcomes:
                if outcome.transport_failed:
                    self._resync_later(outcome.broker_id, outcome.broker_epoch, generation, caused_by)
                elif outcome.ok:
                    self._resync_delays.pop(outcome.broker_id, None)
                if outcome.stopped or outcome.failed:
                    self.enqueue(ev.TopicDeletionReplicaStopped(outcome.broker_id, tuple(outcome.stopped),
                                                                tuple(outcome.failed)), generation=generation,
                                 links=caused_by)
        except SeatLostError as exc:
            if reply is not None and not reply.done():
                reply.set_exception(NotController())
            self._give_up_seat(str(exc))
        except ZkWriteError as exc:
            # The cache no longer matches ZooKeeper: reload everything as a new controller would.
            log.error("%s; reloading the cluster state", exc)
            if reply is not None and not reply.done():
                reply.set_exception(exc)
            if self._seat is not None:
                self._queue.put(_TakeSeat(self._seat, self._generation))
        except NotController as exc:
            if reply is not None and not reply.done():
                reply.set_exception(exc)
        finally:
            metrics.EVENT_PROCESSING_S.labels(type(event).__name__).observe(time.monotonic() - started)

    def _apply(self, event, plan: Plan, started: float) -> ControllerState:
        """The plan's Apply step: the next state becomes the controller's."""
        self._state = apply(self._state, plan)
        if isinstance(event, ev.Startup):
            gc_policy.settle()  # the loaded state lives as long as the seat
        record_metrics(plan, self._state, started)
        return self._state

    def _resync_later(self, broker_id: int, broker_epoch: int, generation: int, links: tuple = ()) -> None:
        """After a request to a broker failed in transit, resend it its whole state (confirmed
        by digest first) in a moment; one resync per broker at a time. The wait doubles while
        the broker keeps failing (an overloaded broker must not be buried in full states) and
        starts again from RESYNC_DELAY_S once a request to it succeeds."""
        with self._resync_lock:
            if broker_id in self._resyncs:
                return
            self._resyncs.add(broker_id)
            delay_s = self._resync_delays[broker_id] = min(
                RESYNC_DELAY_MAX_S, self._resync_delays.get(broker_id, RESYNC_DELAY_S / 2) * 2)

        def fire() -> None:
            with self._resync_lock:
                self._resyncs.discard(broker_id)
            self.enqueue(ev.BrokerResyncRequested(broker_id, broker_epoch), generation=generation, links=links)

        timer = threading.Timer(delay_s, fire)
        timer.daemon = True
        timer.start()

    def _give_up_seat(self, reason: str) -> None:
        log.warning("controller %d gives up its seat: %s", self._controller_id, reason)
        if self._watches:
            self._watches.close()
        self._give_up(reason)
