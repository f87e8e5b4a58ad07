"""A controller process in the simulation: the real controller core over the simulated ZooKeeper.

`SimControllerNode` does what the controller service's adapters do (services/controller/src/
replog/controller/adapters/), in one deterministic step at a time instead of threads:

- seat.py: it holds a ZooKeeper session, wins the seat by creating the ephemeral /controller,
  then raises /controller_epoch with a version check; the version it wrote is its fence. A
  standby watches /controller and stands again when it disappears;
- loader.py / registrations.py: on winning it reads the cluster (brokers' registrations, their
  czxid as broker epoch, the topic's assignment, partition states with their versions) into a
  `ClusterSnapshot` and queues `Startup`; a child watch on /brokers/ids becomes `BrokersChanged`;
- event_loop.py / plan_executor.py: one queued event at a time, `decide` then the plan's steps
  in order: `Write` as one `multi` that first checks /controller_epoch's version (zk_writer.py:
  a deposed controller writes nothing), `Apply`, `Send` (LeaderAndIsr to brokers over the
  simulated network, carrying the controller epoch and the broker's epoch), `Answer` (the
  AlterPartition reply to the leader that asked). A failed fence check gives the seat up; any
  other failed write reloads the state, as a new controller would;
- zk_writer.py writes on a session of its own (the multi writer's), which reconnects when it
  expired: so a controller paused past its session timeout still reaches ZooKeeper when it
  resumes, and only the epoch check stops its writes.

Everything a node sends goes through `send(dst, payload)`, given by the cluster. `ControlTruth`
records which node acted in each controller epoch, for the invariants.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.common.core.partitions import TopicPartition
from replog.common.error_codes import ErrorCode
from replog.common.zk import schema
from replog.controller.adapters.loader import assignment_from_record
from replog.controller.adapters.registrations import broker_info
from replog.controller.core import events as ev
from replog.controller.core.apply import apply
from replog.controller.core.decide import decide
from replog.controller.core.model import (
    ClusterSnapshot,
    ControllerSettings,
    ControllerState,
    LeaderAndIsr,
    TopicElectionConfig,
)
from replog.controller.core.plan import CreatePartitionState, Plan, SetPartitionState
from replog.controller.core.steps import Answer, Apply, Await, Send, Write
from tests.scenario.broker.sim_cluster import AlterAnswer, AlterRequest
from tests.scenario.sim_zookeeper import (
    CHILDREN,
    DELETED,
    EXPIRED,
    BadVersion,
    Check,
    Create,
    MultiFailed,
    NodeExists,
    NoNode,
    Notification,
    SessionExpired,
    SetData,
    SimZooKeeper,
)

SETTINGS = ControllerSettings(auto_leader_rebalance_enable=False)


class ControllerRequest(NamedTuple):
    """A LeaderAndIsr request: its decisions for one broker, as the broker's servicer converts them."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int
    decisions: tuple[LeaderAndIsrDecision, ...]


@dataclass
class ControlTruth:
    """What the controllers did, checked as it happens: one acting node per controller epoch, and
    no partition state accepted by ZooKeeper from a controller epoch older than /controller_epoch's."""

    acting: dict[int, int] = field(default_factory=dict)  # controller epoch -> the node that acted in it
    fenced_writes_refused: int = 0
    failovers: int = 0

    def acted(self, controller_epoch: int, node_id: int) -> None:
        holder = self.acting.setdefault(controller_epoch, node_id)
        assert holder == node_id, f"controller epoch {controller_epoch} acted on by nodes {holder} and {node_id}"


def fence_ops(controller_epoch_version: int) -> list:
    """What every controller write starts with (zk_writer.py): the check of /controller_epoch's version."""
    return [Check(schema.CONTROLLER_EPOCH, controller_epoch_version)]


def state_bytes(state: LeaderAndIsr) -> bytes:
    return schema.PartitionStateRecord(state.leader, state.leader_epoch, tuple(state.isr), state.controller_epoch,
                                       state.unclean_leader_epoch, tuple(state.elr)).encode()


def write_ops(zk: SimZooKeeper, writes: tuple) -> list:
    """The plan's writes as ZooKeeper operations, as zk_writer.py translates them."""
    ops: list = []
    for write in writes:
        tp = write.partition
        if type(write) is SetPartitionState:
            ops.append(SetData(schema.partition_state_path(tp.topic, tp.partition), state_bytes(write.state),
                               write.expected_partition_epoch))
        elif type(write) is CreatePartitionState:
            for path in (schema.partitions_path(tp.topic), schema.partition_path(tp.topic, tp.partition)):
                if path not in zk.nodes:
                    ops.append(Create(path))
            ops.append(Create(schema.partition_state_path(tp.topic, tp.partition), state_bytes(write.state)))
        else:
            raise AssertionError(f"the simulation writes no {write!r}")
    return ops


def read_snapshot(zk: SimZooKeeper, session_id: int, controller_id: int, controller_epoch: int,
                  topics: tuple[str, ...]) -> ClusterSnapshot:
    """The cluster as a new controller reads it (loader.py)."""
    assignments, states, configs = {}, {}, {}
    for topic in topics:
        data, _ = zk.get(session_id, schema.topic_path(topic))
        for partition, assignment in assignment_from_record(schema.TopicAssignment.decode(topic, data)).items():
            tp = TopicPartition(topic, partition)
            assignments[tp] = assignment
            path = schema.partition_state_path(topic, partition)
            if zk.exists(session_id, path) is not None:
                data, stat = zk.get(session_id, path)
                record = schema.PartitionStateRecord.decode(data, path)
                states[tp] = LeaderAndIsr(record.leader, record.leader_epoch, tuple(record.isr),
                                          record.controller_epoch, stat.version, record.unclean_leader_epoch,
                                          tuple(record.elr))
        if zk.exists(session_id, schema.topic_config_path(topic)) is not None:
            data, _ = zk.get(session_id, schema.topic_config_path(topic))
            configs[topic] = TopicElectionConfig.from_map(schema.TopicConfigRecord.decode(topic, data).config)
    return ClusterSnapshot(controller_id, controller_epoch, read_brokers(zk, session_id, watch=False),
                           assignments, states, configs)


def read_brokers(zk: SimZooKeeper, session_id: int, *, watch: bool) -> dict:
    """The live registrations, each with its czxid as broker epoch (loader.read_live_brokers)."""
    live = {}
    for child in zk.get_children(session_id, schema.BROKER_IDS, watch=watch):
        try:
            data, stat = zk.get(session_id, schema.broker_path(int(child)))
        except NoNode:
            continue
        live[int(child)] = broker_info(schema.BrokerRegistration.decode(int(child), data), stat.czxid)
    return live


class _Queued(NamedTuple):
    event: object
    reply_to: AlterRequest | None = None


class SimControllerNode:
    def __init__(self, node_id: int, zk: SimZooKeeper, truth: ControlTruth, send: Callable[[int, object], bool],
                 *, topics: tuple[str, ...], seed: int) -> None:
        self.node_id = node_id
        self.zk = zk
        self.truth = truth
        self.send = send
        self.topics = topics
        self.rng = random.Random(seed)  # decide()'s own seeded source
        self.alive = True
        self.paused = False  # a process stopped (a long GC pause): no heartbeats, no events
        self.session: int | None = None
        self.writer_session: int | None = None
        self.seat: tuple[int, int] | None = None  # (controller epoch, /controller_epoch version)
        self.state = ControllerState.empty(SETTINGS)
        self.queue: deque[_Queued] = deque()
        self.held: list[Notification] = []  # what ZooKeeper sent while the process was paused, unread
        self.events: list[str] = []

    # --- life --------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.seat is not None

    @property
    def controller_epoch(self) -> int:
        return self.seat[0] if self.seat else 0

    @property
    def connected(self) -> bool:
        return self.alive and not self.paused

    def heartbeat(self) -> None:
        if not self.connected:
            return
        for session_id in (self.session, self.writer_session):
            if session_id is not None and self.zk.alive(session_id):
                self.zk.touch(session_id)

    def start(self) -> None:
        """(Re)connect: a new session, and a try for the seat."""
        assert self.connected
        self.session = self.zk.open_session(f"controller-{self.node_id}")
        self.try_elect()

    def kill(self) -> None:
        """The process dies: its sessions are left to expire, what it had queued is gone."""
        self.alive = False
        self.held.clear()
        self._forget_seat("killed")

    def restart(self) -> None:
        self.alive, self.paused = True, False
        self.session = self.writer_session = None
        self.start()

    def resume(self) -> None:
        """After a pause: it goes on with what it had queued until its client, reconnecting, hears that
        the session expired (queued behind what is already queued, so the seed decides what runs first)."""
        self.paused = False
        self.zk.notifications.extend(self.held)  # an expiry among them included
        self.held.clear()

    # --- the seat (seat.py) ----------------------------------------------------------------

    def try_elect(self) -> None:
        if self.active or not self.connected or self.session is None or not self.zk.alive(self.session):
            return
        zk, session = self.zk, self.session
        record = schema.ControllerRecord(self.node_id, zk.clock.now_ms(), f"controller-{self.node_id}", 9000)
        try:
            zk.create(session, schema.CONTROLLER, record.encode(), ephemeral=True)
        except NodeExists:
            if zk.exists(session, schema.CONTROLLER, watch=True) is None:
                return self.try_elect()  # gone in between
            return None  # standing by
        controller_epoch, version = self._bump_epoch()
        zk.exists(session, schema.CONTROLLER, watch=True)
        self.seat = (controller_epoch, version)
        self.truth.failovers += 1
        self.events.append(f"controller {self.node_id}: won the seat, epoch {controller_epoch}")
        self._load()
        return None

    def _bump_epoch(self) -> tuple[int, int]:
        zk, session = self.zk, self.session
        while True:
            try:
                data, stat = zk.get(session, schema.CONTROLLER_EPOCH)
            except NoNode:
                try:
                    stat = zk.create(session, schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(1))
                    return 1, stat.version
                except NodeExists:
                    continue
            epoch = schema.decode_controller_epoch(data) + 1
            try:
                return epoch, zk.set(session, schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(epoch),
                                     stat.version).version
            except BadVersion:
                continue

    def _load(self) -> None:
        """Watches first, then the snapshot, then Startup (event_loop._take_seat)."""
        self.queue.clear()
        read_brokers(self.zk, self.session, watch=True)
        snapshot = read_snapshot(self.zk, self.session, self.node_id, self.controller_epoch, self.topics)
        self.queue.append(_Queued(ev.Startup(snapshot)))

    def _forget_seat(self, reason: str) -> None:
        if self.seat is not None:
            self.events.append(f"controller {self.node_id}: gave up epoch {self.seat[0]}: {reason}")
        self.seat = None
        self.queue.clear()
        self.state = ControllerState.empty(SETTINGS)

    def give_up(self, reason: str) -> None:
        """Leave the seat (seat.give_up): delete /controller if it is still ours, and stand again."""
        self._forget_seat(reason)
        if self.session is not None and self.zk.alive(self.session):
            try:
                data, _ = self.zk.get(self.session, schema.CONTROLLER)
                if schema.ControllerRecord.decode(data).controller_id == self.node_id:
                    self.zk.delete(self.session, schema.CONTROLLER)
            except NoNode:
                pass
            self.try_elect()

    # --- what ZooKeeper tells it --------------------------------------------------------

    def notified(self, notification: Notification) -> str:
        try:
            return self._notified(notification)
        except SessionExpired:
            return self._session_lost()

    def _session_lost(self) -> str:
        """A request found the session expired (kazoo's SessionExpiredError): resign, reconnect, stand again."""
        self._forget_seat("zookeeper session expired")
        self.start()
        return "session expired; reconnected"

    def _notified(self, notification: Notification) -> str:
        if not self.alive:
            return "not heard (the process is dead)"
        if self.paused:
            self.held.append(notification)
            return "held (the process is paused)"
        if notification.kind == EXPIRED:
            if notification.session_id == self.writer_session:
                self.writer_session = None  # the writer reconnects on its next write
                return "writer session expired"
            if notification.session_id != self.session:
                return "an earlier session's expiry"
            return self._session_lost()
        if notification.path == schema.CONTROLLER and notification.kind == DELETED:
            if self.active:
                self._forget_seat("/controller was deleted")
            self.try_elect()
            return f"/controller deleted; {'won' if self.active else 'standing by'}"
        if notification.path == schema.BROKER_IDS and notification.kind == CHILDREN and self.active:
            self.queue.append(_Queued(ev.BrokersChanged(read_brokers(self.zk, self.session, watch=True))))
            return "brokers changed"
        return "ignored"

    def receive_alter_partition(self, request: AlterRequest) -> str:
        """Queued while it believes it holds the seat, paused included (the request waits in its socket)."""
        if not self.alive or not self.active:
            return "not the controller; the leader retries"
        proposal = request.proposal
        item = ev.AlterPartitionItem(proposal.topic_partition, proposal.leader_epoch, proposal.new_isr,
                                     proposal.partition_epoch, proposal.new_isr_broker_epochs)
        self.queue.append(_Queued(ev.AlterPartitionReceived(request.broker_id, request.broker_epoch, (item,)),
                                  request))
        return "queued"

    def resync(self, broker_ids: set[int]) -> bool:
        """The loop's resync of brokers a request did not reach: each gets its whole state again.
        False when it cannot now (not running, or not the controller)."""
        if not (self.connected and self.active):
            return False
        for broker_id, info in sorted(self.state.live_brokers.items()):
            if broker_id in broker_ids:
                self.queue.append(_Queued(ev.BrokerResyncRequested(broker_id, info.broker_epoch)))
        return True

    # --- the loop (event_loop.py, plan_executor.py) ------------------------------------------

    @property
    def runnable(self) -> bool:
        return self.connected and self.active and bool(self.queue)

    def step(self) -> str:
        """Decide the next queued event and carry its plan out."""
        item = self.queue.popleft()
        plan = decide(self.state, item.event, self.rng)
        name = type(item.event).__name__
        try:
            self._execute(plan, item)
        except SessionExpired:
            return f"{name}: {self._session_lost()}"
        except MultiFailed as failure:
            if failure.op.path == schema.CONTROLLER_EPOCH:  # the fence: another controller holds the seat
                self.truth.fenced_writes_refused += 1
                self.give_up("the /controller_epoch check failed")
                return f"{name}: fenced, gave up the seat"
            self.events.append(f"controller {self.node_id}: write failed ({failure}); reloading")
            try:
                self._load()
            except SessionExpired:
                return f"{name}: write failed; {self._session_lost()}"
            return f"{name}: write failed, reloading"
        for follow_up in plan.follow_ups:
            self.queue.append(_Queued(follow_up))
        return name

    def _execute(self, plan: Plan, item: _Queued) -> None:
        for step in plan.steps:
            kind = type(step)
            if kind is Write:
                self._write(step.writes)
            elif kind is Apply:
                self.state = apply(self.state, plan)
            elif kind is Send:
                self._send(step)
            elif kind is Answer:
                self._answer(step, item.reply_to)
            else:
                assert kind is Await  # requests are messages here; nobody waits for an answer

    def _write(self, writes: tuple) -> None:
        if not writes:
            return
        epoch, version = self.seat
        if self.writer_session is None or not self.zk.alive(self.writer_session):
            self.writer_session = self.zk.open_session(f"controller-{self.node_id}-writer")
        self.truth.acted(epoch, self.node_id)
        self.zk.multi(self.writer_session, fence_ops(version) + write_ops(self.zk, writes))

    def _send(self, step: Send) -> None:
        epoch = self.controller_epoch
        for request in step.leader_and_isr:
            decisions = tuple(
                LeaderAndIsrDecision(d.partition, d.state.leader, d.state.leader_epoch, tuple(d.state.isr),
                                     d.state.partition_epoch, tuple(d.assignment.replicas), d.is_new,
                                     tuple(d.assignment.adding))
                for d in request.partitions
            )
            if decisions:
                self.truth.acted(epoch, self.node_id)
                self.send(request.broker_id, ControllerRequest(self.node_id, epoch, request.broker_epoch, decisions))

    def _answer(self, step: Answer, reply_to: AlterRequest | None) -> None:
        reply = step.reply
        if reply_to is None or reply is None or reply.error is not ErrorCode.NONE:
            return  # a request-level refusal: the leader retries (controller_link.py)
        (result,) = reply.results
        state = result.state
        answer = AlterPartitionAnswer(result.error, state.leader if state else -1,
                                      state.leader_epoch if state else -1, tuple(state.isr) if state else (),
                                      state.partition_epoch if state else -1)
        self.send(reply_to.broker_id, AlterAnswer(reply_to.broker_epoch, reply_to.proposal, answer))
