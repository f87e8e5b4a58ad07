"""The network and ZooKeeper faults of the matrix (issue 39, sections 3 and 4), for a multi-host cluster
(`ClusterSpec(hosts=True)`, a network namespace per process) with a 3-server ZooKeeper ensemble.

Each network fault enters its cuts or delayed links into the cell's `FaultContext.held` stack and the
heal closes the stack, which restores the network (also when the cell fails on the way). What each cut
means, for the target process T (a partition leader, a follower, or the active controller):

- isolate: T reaches no one and no one reaches T (ZooKeeper, brokers, controllers, clients);
- cut-from-followers: T (the leader of partition 0) and the other replicas of its partitions lose each
  other's packets, both ways; ZooKeeper, the controllers and the clients still reach T;
- cut-from-zookeeper: T and every ZooKeeper server lose each other's packets; everyone else reaches T;
- cut-controller-from-brokers: T (the active controller) and every broker lose each other's packets;
- one-way-cut: what T sends to every other broker and controller is lost, what they send arrives;
  ZooKeeper and the clients still reach T both ways;
- delay-loss: T's links to the other brokers (or, for a leader, its followers' links to it) pass a proxy
  that delays every chunk 100 ms and holds 5 % of them a retransmission timeout more.

The ZooKeeper faults target the ensemble: one follower server killed, the ensemble's leader killed, every
server stopped past the session timeout; each is restarted at the heal. Pairs a cut does not apply to are
in `NOT_APPLICABLE`, with the reason the summary table shows.
"""

from __future__ import annotations

from replog.devcluster import zookeeper
from replog.devcluster.delay_proxy import LinkShape, delay_link
from replog.devcluster.netfaults import NetworkFaults
from tests.integration.broker_helpers import partition_state, wait_for

from .faults import Fault, FaultContext, TargetKind, _kill, _partition_zero, _start, _stop

DELAY = LinkShape(delay_ms=100, loss=0.05)
ISR_SHRINK_MARGIN_S = 2.0  # past replica.lag.time.max.ms: the leader's next check, AlterPartition, ZooKeeper


def _names(ctx: FaultContext, role: str) -> list[str]:
    return [p.name for p in ctx.cluster.of_role(role)]


def _faults(ctx: FaultContext) -> NetworkFaults:
    assert ctx.cluster.network is not None, "network faults need a multi-host cluster (ClusterSpec(hosts=True))"
    return NetworkFaults(ctx.cluster.network)


def _heal_network(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    ctx.held.close()


def _isolate(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    for target in targets:
        ctx.held.enter_context(_faults(ctx).isolate(target))


def _cut_from_followers(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    """Cut the leader from the other replicas, and require the ISR of partition 0 to shrink to the leader
    within replica.lag.time.max.ms (and a margin): the availability goal of issue 39 for this cut."""
    (target,) = targets
    state = _partition_zero(ctx)
    others = [b for b in _names(ctx, "broker") if b != target]  # the RF 3 topic's replicas are every broker
    ctx.held.enter_context(_faults(ctx).cut(target, others))
    bound_s = ctx.lag_s + ISR_SHRINK_MARGIN_S
    wait_for(lambda: list(partition_state(ctx.zk, ctx.topic, 0).isr) == [state.leader], bound_s,
             f"the ISR of {ctx.topic}-0 to shrink to its leader {state.leader} within replica.lag.time.max.ms "
             f"({ctx.lag_s:g} s) + {ISR_SHRINK_MARGIN_S:g} s of the cut")


def _cut_from_zookeeper(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    for target in targets:
        ctx.held.enter_context(_faults(ctx).cut(target, _names(ctx, "zookeeper")))


def _cut_from_brokers(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    for target in targets:
        ctx.held.enter_context(_faults(ctx).cut(target, _names(ctx, "broker")))


def _one_way(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    for target in targets:
        others = [n for n in _names(ctx, "broker") + _names(ctx, "controller") if n != target]
        ctx.held.enter_context(_faults(ctx).cut(target, others, one_way=True))


def _delay(ctx: FaultContext, targets: tuple[str, ...]) -> None:
    """A leader: its followers' connections to it; anyone else: its connections to every other broker."""
    network, leader = ctx.cluster.network, f"broker-{_partition_zero(ctx).leader}"
    for number, target in enumerate(targets):
        if target == leader:
            links = [(b, target) for b in _names(ctx, "broker") if b != target]
        else:
            links = [(target, b) for b in _names(ctx, "broker") if b != target]
        for seed, (source, to) in enumerate(links, start=number * 10):
            port = ctx.cluster.processes[to].port
            ctx.held.enter_context(delay_link(network, source, to, port, DELAY, seed=seed))


def _zookeeper_in_mode(ctx: FaultContext, wanted: str) -> tuple[str, ...]:
    for info in ctx.cluster.of_role("zookeeper"):
        if zookeeper.mode(info.host, info.port, ctx.cluster.zookeeper_tls) == wanted:
            return (info.name,)
    raise AssertionError(f"no ZooKeeper server is a {wanted} now")


NETWORK_TARGETS = {kind.name: kind for kind in (
    TargetKind("zk-follower", lambda ctx: _zookeeper_in_mode(ctx, "follower")),
    TargetKind("zk-leader", lambda ctx: _zookeeper_in_mode(ctx, "leader")),
    TargetKind("zk-ensemble", lambda ctx: tuple(_names(ctx, "zookeeper"))),
)}

ALL_KINDS = ("leader", "follower", "controller")
PAST_SESSION = lambda ctx: ctx.session_s + 2.0  # noqa: E731 - long enough for the cluster to move on

NETWORK_FAULTS = {fault.name: fault for fault in (
    Fault("isolate", ALL_KINDS, _isolate, _heal_network, PAST_SESSION),
    Fault("cut-from-followers", ("leader",), _cut_from_followers, _heal_network, lambda ctx: 1.0, goal="none"),
    Fault("cut-from-zookeeper", ALL_KINDS, _cut_from_zookeeper, _heal_network, PAST_SESSION, goal="none"),
    Fault("cut-controller-from-brokers", ("controller",), _cut_from_brokers, _heal_network, PAST_SESSION,
          goal="none"),
    Fault("one-way-cut", ALL_KINDS, _one_way, _heal_network, PAST_SESSION, goal="none"),
    Fault("delay-100ms-loss-5pct", ALL_KINDS, _delay, _heal_network, lambda ctx: 5.0, goal="none"),
    Fault("zk-kill", ("zk-follower", "zk-leader"), _kill, _start, PAST_SESSION, goal="outage"),
    Fault("zk-restart", ("zk-ensemble",), _stop, _start, PAST_SESSION, goal="outage"),
)}

NOT_APPLICABLE = {
    ("cut-from-followers", "follower"): "skipped: the cut is a leader's (a follower has no followers)",
    ("cut-from-followers", "controller"): "skipped: a controller replicates no partition",
    ("cut-controller-from-brokers", "leader"): "skipped: the cut is the active controller's",
    ("cut-controller-from-brokers", "follower"): "skipped: the cut is the active controller's",
}


def network_cells() -> list[tuple[str, str]]:
    """Every (fault, target kind) of the network matrix, in a fixed order."""
    return [(fault.name, kind) for fault in NETWORK_FAULTS.values() for kind in fault.kinds]
