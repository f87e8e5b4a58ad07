"""The simulated cluster with real controllers: two `SimControllerNode`s over a `SimZooKeeper`.

`ZkSimCluster` is `SimCluster` (sim_cluster.py) with the stub controller replaced by what the
services run: the controller core behind two controller processes (one active, one standby,
sim_controller_node.py) and a simulated ZooKeeper (tests/scenario/sim_zookeeper.py) holding the
seat, the controller epoch, the partition state and the brokers' registrations.

- Each broker registers as an ephemeral /brokers/ids/<id> on a session of its own; its broker
  epoch is the registration's czxid. A running broker heartbeats; one cut off (`isolate`) or
  dead stops, and its session expires after the timeout: the controller hears of it through its
  watch on /brokers/ids. A restarted broker waits for its old registration to go before it
  registers again; a bounced one closed its session on the way down.
- LeaderAndIsr requests travel over the simulated network with the controller epoch and the
  broker epoch they were meant for; each broker judges them as its control servicer does: the
  controller fence (replog.broker.control.controller_fence over core/controller_epoch.py, which
  asks ZooKeeper's /controller_epoch about a higher epoch), then the broker epoch.
- A leader sends AlterPartition to the node /controller names, as its controller link does.
- The controllers' work runs whenever time moves (`tick`): ZooKeeper's notifications and the
  nodes' queued events are interleaved in an order the seed's generator chooses.

The invariants' view of "the controller's decision" (`controller`) is what ZooKeeper holds for
the partition. Two more checks run as things happen: one node acting per controller epoch
(`ControlTruth.acted`), and no partition state accepted from a controller epoch other than
/controller_epoch's (`_check_accepted_write`).
"""

from __future__ import annotations

import random

from replog.broker.control.controller_fence import ControllerFence
from replog.broker.core.isr.isr_proposal import AlterPartitionProposal
from replog.common.clock import ManualClock
from replog.common.core.partitions import NO_LEADER
from replog.common.zk import schema
from tests.scenario.broker.sim_cluster import AlterRequest, SimCluster
from tests.scenario.broker.sim_controller_node import ControllerRequest, ControlTruth, SimControllerNode
from tests.scenario.broker.sim_members import REPLICAS, TP, SimBroker
from tests.scenario.broker.sim_network import CONTROLLER, Message, SimNetwork
from tests.scenario.sim_zookeeper import EXPIRED, Create, NodeExists, Notification, SetData, SimZooKeeper

CONTROLLER_IDS = (CONTROLLER, 4)  # network node ids of the two controller processes
CONTROL_STEPS_MAX = 500  # per tick: notifications delivered plus events decided


class ZkPartitionView:
    """The partition's state znode, read as the invariants read the stub's fields."""

    def __init__(self, zk: SimZooKeeper) -> None:
        self._zk = zk
        self._path = schema.partition_state_path(TP.topic, TP.partition)
        self._read: tuple = (None, None)  # (mzxid, (record, version)): decoded once per write

    def _record(self):
        node = self._zk.nodes.get(self._path)
        if node is None:
            return None
        if self._read[0] != node.mzxid:  # every create and set has its own zxid
            self._read = (node.mzxid, (schema.PartitionStateRecord.decode(node.data, self._path), node.version))
        return self._read[1]

    @property
    def leader(self) -> int:
        found = self._record()
        return NO_LEADER if found is None else found[0].leader

    @property
    def leader_epoch(self) -> int:
        found = self._record()
        return -1 if found is None else found[0].leader_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        found = self._record()
        return REPLICAS if found is None else found[0].isr

    @property
    def elr(self) -> tuple[int, ...]:
        found = self._record()
        return () if found is None else found[0].elr

    @property
    def partition_epoch(self) -> int:
        found = self._record()
        return -1 if found is None else found[1]


class ZkSimCluster(SimCluster):
    def __init__(self, clock: ManualClock, *, network: SimNetwork, rng: random.Random, seed: int,
                 assign_epoch_on_leadership: bool = True, strict_min_isr: bool = False,
                 durable: bool = False) -> None:
        super().__init__(clock, assign_epoch_on_leadership=assign_epoch_on_leadership, network=network,
                         strict_min_isr=strict_min_isr, durable=durable)
        self.rng = rng
        self.zk = SimZooKeeper(clock)
        self.zk.observer = self._check_accepted_write
        self.controller = ZkPartitionView(self.zk)
        self.truth = ControlTruth()
        self.nodes = {
            node_id: SimControllerNode(node_id, self.zk, self.truth, self._sender(node_id), topics=(TP.topic,),
                                       seed=seed * 7 + node_id)
            for node_id in CONTROLLER_IDS
        }
        self.broker_sessions: dict[int, int] = {}
        self.awaiting_registration: set[int] = set()
        self.unclean_start: dict[int, bool] = {}  # what each broker's pending registration says
        self.fences: dict[tuple[int, int], ControllerFence] = {}
        self.stale_controller_refusals = 0
        # (controller, broker) whose latest LeaderAndIsr has not reached the broker: the sender's call failed,
        # and its resync (event_loop._resync_later) sends the broker its whole state again.
        self.unanswered: dict[tuple[int, int], ControllerRequest] = {}
        self.controller_faults = 0

    @property
    def controller_ids(self) -> tuple[int, ...]:
        return CONTROLLER_IDS

    def _sender(self, node_id: int):
        def send(dst: int, payload) -> bool:
            if isinstance(payload, ControllerRequest):
                self.unanswered[(node_id, dst)] = payload
            return self._send(node_id, dst, payload)
        return send

    # --- set-up -----------------------------------------------------------------

    def start(self) -> None:
        """The topic exists in ZooKeeper, the brokers register, the controllers start (node 0 first)."""
        admin = self.zk.open_session("admin")
        self.zk.ensure_path(admin, schema.BROKER_IDS)
        self.zk.ensure_path(admin, schema.TOPICS)
        self.zk.create(admin, schema.topic_path(TP.topic),
                       schema.TopicAssignment(partitions={TP.partition: REPLICAS}).encode())
        self.zk.close_session(admin)
        for broker in self.brokers.values():
            self._open_and_register(broker, unclean_start=False)
        for node in self.nodes.values():
            node.start()
        self._run_control_plane()
        self.deliver_all()

    def _registration(self, broker_id: int, *, unclean_start: bool) -> bytes:
        return schema.BrokerRegistration(broker_id, f"broker-{broker_id}", 9090 + broker_id,
                                         unclean_start=unclean_start,
                                         min_insync_replicas_default=self.leader_min_insync_replicas).encode()

    def _open_and_register(self, broker: SimBroker, *, unclean_start: bool) -> None:
        broker.broker_epoch = 0  # unregistered: it obeys no controller yet
        self.broker_sessions[broker.broker_id] = self.zk.open_session(f"broker-{broker.broker_id}")
        self.unclean_start[broker.broker_id] = unclean_start
        self.awaiting_registration.add(broker.broker_id)
        self._try_register(broker)

    def _try_register(self, broker: SimBroker) -> None:
        """register_broker: create the ephemeral; while an earlier session's is still there, wait for it to go."""
        session = self.broker_sessions[broker.broker_id]
        registration = self._registration(broker.broker_id, unclean_start=self.unclean_start[broker.broker_id])
        try:
            stat = self.zk.create(session, schema.broker_path(broker.broker_id), registration, ephemeral=True)
        except NodeExists:
            return
        broker.broker_epoch = stat.czxid
        self.awaiting_registration.discard(broker.broker_id)
        self.events.append(f"broker {broker.broker_id}: registered, broker epoch {stat.czxid}")

    # --- brokers' lives, as ZooKeeper sees them ------------------------------------------------

    def _controller_hears_death(self, broker: SimBroker) -> None:
        """Nothing at once: its session expires once the timeout passes unheard."""
        self.awaiting_registration.discard(broker.broker_id)

    def _controller_hears_halt(self, broker: SimBroker) -> None:
        """A halting broker ends its session on the way out (runtime/halt.py), so its registration goes now;
        cut off from ZooKeeper, it exits all the same and the session expires later."""
        self.awaiting_registration.discard(broker.broker_id)
        if not broker.isolated:
            self.zk.close_session(self.broker_sessions[broker.broker_id])

    def _register_restarted(self, broker: SimBroker) -> None:
        self._open_and_register(broker, unclean_start=True)  # no clean-shutdown marker

    def _register_bounced(self, broker: SimBroker) -> None:
        self.zk.close_session(self.broker_sessions[broker.broker_id])  # closed on the way down
        self._open_and_register(broker, unclean_start=True)

    def _controller_hears_isolation(self, broker: SimBroker) -> None:
        """Cut off from ZooKeeper and the controllers: it stops heartbeating, and may expire."""

    def _controller_hears_heal(self, broker: SimBroker) -> None:
        """Reconnected: its session goes on, or, expired meanwhile, it registers again (a new broker epoch)."""
        if not self.zk.alive(self.broker_sessions[broker.broker_id]):
            self._open_and_register(broker, unclean_start=False)

    # --- controllers' lives --------------------------------------------------------------

    def active_node(self) -> SimControllerNode | None:
        data = self.zk.nodes.get(schema.CONTROLLER)
        if data is None:
            return None
        return self.nodes[schema.ControllerRecord.decode(data.data).controller_id]

    def choose_controller_fault(self, rng: random.Random) -> tuple:
        """A schedule's action (sim_schedule.py): kill, pause or expire the session of the active controller
        process, or bring back one that is down or paused."""
        down = [n for n in self.nodes.values() if not n.alive]
        paused = [n for n in self.nodes.values() if n.alive and n.paused]
        active = self.active_node()
        roll = rng.random()
        if (down or paused) and roll < 0.4:
            node = rng.choice(down + paused)
            return ("controller", "resume" if node.alive else "restart", node.node_id)
        if active is None or not active.connected:
            return ("controller", "none", 0)
        if roll < 0.55:
            return ("controller", "kill", active.node_id)
        if roll < 0.85:  # long enough, its session expires and the standby takes over while it sleeps
            return ("controller", "pause", active.node_id)
        return ("controller", "expire", active.node_id)

    def controller_fault(self, what: str, node_id: int) -> str:
        """Do what `choose_controller_fault` chose, if it still applies (a shrunk schedule may have
        dropped the steps that made it apply)."""
        node = self.nodes.get(node_id)
        if node is None or what == "none":
            return "no controller fault"
        self.controller_faults += 1
        if what == "resume" and node.alive and node.paused:
            node.resume()
            return f"controller {node_id} resumed"
        if what == "restart" and not node.alive:
            node.restart()
            return f"controller {node_id} restarted"
        if node is not self.active_node() or not node.connected:
            return f"controller {node_id} {what}: does not apply"
        if what == "kill":
            node.kill()
            return f"controller {node_id} killed"
        if what == "pause":
            node.paused = True
            return f"controller {node_id} paused"
        if what == "expire":
            self.zk.expire(node.session)
            return f"controller {node_id}: session expired"
        return f"controller {node_id} {what}: does not apply"

    def heal_controllers(self) -> None:
        for node in self.nodes.values():
            if not node.alive:
                node.restart()
            elif node.paused:
                node.resume()

    # --- time, and the control plane's work --------------------------------------------------

    def tick(self, delta_ms: int) -> None:
        super().tick(delta_ms)
        for broker in self.brokers.values():
            session = self.broker_sessions.get(broker.broker_id)
            if broker.alive and not broker.isolated and session is not None and self.zk.alive(session):
                self.zk.touch(session)
        for node in self.nodes.values():
            node.heartbeat()
        self.zk.expire_due()
        for broker_id in sorted(self.awaiting_registration):
            broker = self.brokers[broker_id]
            if broker.alive and not broker.isolated:
                self._try_register(broker)
        self._run_control_plane()

    def _run_control_plane(self) -> None:
        """Deliver ZooKeeper's notifications and run the controllers' queued events, interleaved by the seed."""
        nodes = self.nodes.values()
        for _ in range(CONTROL_STEPS_MAX):
            if not self.zk.notifications and not any(node.queue for node in nodes):
                return
            choices: list = [None] if self.zk.notifications else []
            choices += [node for node in nodes if node.runnable]
            if not choices:
                return
            picked = self.rng.choice(choices)
            if picked is None:
                self._notify(self.zk.take_notification())
            else:
                outcome = picked.step()
                self.events.append(f"controller {picked.node_id}: {outcome}")
        raise AssertionError("the controllers never went quiet")

    def _notify(self, notification: Notification) -> None:
        for node in self.nodes.values():
            if notification.session_id in (node.session, node.writer_session):
                self.events.append(f"controller {node.node_id}: {notification.kind} {notification.path}: "
                                   f"{node.notified(notification)}")
                return
        for broker_id, session in self.broker_sessions.items():
            if notification.session_id == session and notification.kind == EXPIRED:
                self.events.append(f"broker {broker_id}: zookeeper session expired")
                broker = self.brokers[broker_id]
                if broker.alive and not broker.isolated:
                    self._open_and_register(broker, unclean_start=False)
                return

    def broadcast(self) -> None:
        """The controllers' resyncs: a broker whose LeaderAndIsr was lost gets its whole state again."""
        for node in self.nodes.values():
            failed = {b for n, b in self.unanswered if n == node.node_id}
            if failed and (node.resync(failed) or not node.active):  # a paused one resyncs once it wakes
                for broker_id in failed:
                    del self.unanswered[(node.node_id, broker_id)]
        self._run_control_plane()

    # --- messages ------------------------------------------------------------------------------

    def _send_alter_partition(self, broker: SimBroker, proposal: AlterPartitionProposal) -> None:
        """To the controller /controller names (the broker's controller link watches it)."""
        holder = self.active_node()
        if holder is not None:
            self._send(broker.broker_id, holder.node_id, AlterRequest(broker.broker_id, broker.broker_epoch, proposal))

    def _receive(self, message: Message) -> str:
        payload = message.payload
        if isinstance(payload, AlterRequest):
            if self.brokers[payload.broker_id].isolated:
                return "lost (the sender is cut off from the controller)"
            return self.nodes[message.dst].receive_alter_partition(payload)
        if message.src not in self.nodes:
            return super()._receive(message)
        broker = self.brokers[message.dst]
        if not broker.alive or broker.incarnation != message.incarnation:
            return "lost (its receiver died)"
        if broker.isolated:
            return "lost (the receiver is cut off from the controller)"
        if isinstance(payload, ControllerRequest):
            if self.unanswered.get((message.src, broker.broker_id)) is payload:  # an older one does not answer it
                del self.unanswered[(message.src, broker.broker_id)]
            return self._take_controller_request(broker, payload)
        return self._take_alter_answer(broker, payload.broker_epoch, payload.proposal, payload.answer)

    def _fence(self, broker: SimBroker) -> ControllerFence:
        """The broker process's controller fence, which reads /controller_epoch when it must."""
        key = (broker.broker_id, broker.incarnation)
        if key not in self.fences:
            self.fences[key] = ControllerFence(self._controller_epoch_in_zookeeper)
        return self.fences[key]

    def _controller_epoch_in_zookeeper(self) -> int:
        node = self.zk.nodes.get(schema.CONTROLLER_EPOCH)
        return -1 if node is None else schema.decode_controller_epoch(node.data)

    def _take_controller_request(self, broker: SimBroker, request: ControllerRequest) -> str:
        """The control servicer's checks (controller epoch, then broker epoch), then each decision."""
        refusal = self._fence(broker).admit(request.controller_epoch)
        if refusal is not None:
            self.stale_controller_refusals += 1
            return f"refused: {refusal.code.name}"
        if broker.broker_epoch == 0 or request.broker_epoch < broker.broker_epoch:
            return f"refused: STALE_BROKER_EPOCH ({request.broker_epoch}, registered {broker.broker_epoch})"
        for decision in request.decisions:
            self._apply_decision(broker, decision)
        return f"LeaderAndIsr of controller epoch {request.controller_epoch} applied"

    # --- checks ----------------------------------------------------------------------------------

    def _check_accepted_write(self, session_id: int, ops: list) -> None:
        """A partition state ZooKeeper accepted names the controller epoch in /controller_epoch."""
        current = self._controller_epoch_in_zookeeper()
        for op in ops:
            if type(op) in (Create, SetData) and op.path.endswith("/state"):
                written = schema.PartitionStateRecord.decode(op.data, op.path).controller_epoch
                assert written == current, (
                    f"ZooKeeper accepted {op.path} from controller epoch {written} while /controller_epoch is "
                    f"{current}: a fenced controller wrote"
                )

    def control_counts(self) -> tuple[int, int, int]:
        """(controller processes, ZooKeeper session expiries, seats won)."""
        return len(self.nodes), self.zk.expiries, self.truth.failovers


def started_cluster(seed: int = 1) -> ZkSimCluster:
    """A cluster with the simulation's settings (strict min ISR, the durable mode), started: for story tests."""
    rng = random.Random(seed)
    clock = ManualClock()
    cluster = ZkSimCluster(clock, network=SimNetwork(rng, clock), rng=rng, seed=seed, strict_min_isr=True,
                           durable=True)
    cluster.start()
    cluster.check_invariants()
    return cluster
