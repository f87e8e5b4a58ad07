"""The faults of the matrix and the targets they hit.

A fault is a name, the target kinds it applies to, and an inject/heal pair of callables given the
cluster's handle (`FaultContext`) and the chosen target (process names), with how long to hold the
fault between the two. A target kind is a name and a chooser that names the processes at the
moment of the fault (the leader changes from cell to cell). The process faults here run on the
ordinary loopback cluster; the network and ZooKeeper faults (network_faults.py) run on a multi-host
cluster.
"""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass, field
from typing import Callable

from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.devcluster import LocalCluster

from .session_expiry import expire_session

# A broker started after kill -9 re-reads its logs from the recovery point before it serves. In the long
# form every cell's topics stay, so after kill-all that takes minutes, not seconds (docs/operations.md).
RESTART_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class FaultContext:
    cluster: LocalCluster
    zk: ZkClient
    session_s: float  # the services' ZooKeeper session timeout
    topic: str  # the RF 3 topic whose partition 0 names the leader and follower targets
    lag_s: float = 0.0  # the brokers' replica.lag.time.max.ms, in seconds
    # What a fault holds until its heal (network cuts, delayed links): the heal closes it.
    held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


@dataclass(frozen=True)
class TargetKind:
    name: str
    choose: Callable[[FaultContext], tuple[str, ...]]


@dataclass(frozen=True)
class Fault:
    name: str
    kinds: tuple[str, ...]
    inject: Callable[[FaultContext, tuple[str, ...]], None]
    heal: Callable[[FaultContext, tuple[str, ...]], None]
    hold_s: Callable[[FaultContext], float]
    # The availability goal after the fault (cells.goals): "session-if-leader" (a leader's partitions
    # take writes within the session timeout + 2 s), "outage" (no stall longer than the fault lasted),
    # "none" (reported, not asserted). Every cell also has to take writes within 5 s of the heal.
    goal: str = "session-if-leader"


# --- targets ------------------------------------------------------------------------------------


def _partition_zero(ctx: FaultContext) -> schema.PartitionStateRecord:
    found = ctx.zk.get(schema.partition_state_path(ctx.topic, 0))
    assert found, f"{ctx.topic}-0 has no state in ZooKeeper"
    return schema.PartitionStateRecord.decode(found[0])


def choose_leader(ctx: FaultContext) -> tuple[str, ...]:
    state = _partition_zero(ctx)
    assert state.leader >= 0, f"{ctx.topic}-0 has no leader to hit"
    return (f"broker-{state.leader}",)


def choose_follower(ctx: FaultContext) -> tuple[str, ...]:
    state = _partition_zero(ctx)
    followers = [b for b in state.isr if b != state.leader]
    assert followers, f"{ctx.topic}-0 has no follower in its ISR {state.isr}"
    return (f"broker-{followers[0]}",)


def choose_controller(ctx: FaultContext) -> tuple[str, ...]:
    found = ctx.zk.get(schema.CONTROLLER)
    assert found, "no active controller in /controller"
    return (f"controller-{schema.ControllerRecord.decode(found[0]).controller_id}",)


def choose_all(ctx: FaultContext) -> tuple[str, ...]:
    return tuple(p.name for role in ("controller", "broker") for p in ctx.cluster.of_role(role))


TARGETS = {kind.name: kind for kind in (
    TargetKind("leader", choose_leader),
    TargetKind("follower", choose_follower),
    TargetKind("controller", choose_controller),
    TargetKind("all", choose_all),
)}


# --- process faults -----------------------------------------------------------------------------


def _start(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for name in names:
        ctx.cluster.start(name)
    ctx.cluster.wait_healthy(list(names), RESTART_TIMEOUT_S)


def _stop(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for name in names:
        ctx.cluster.stop(name)


def _kill(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for name in names:  # every signal first, then the reaping: "at once"
        ctx.cluster.signal(name, signal.SIGKILL)
    for name in names:
        ctx.cluster.kill(name)


def _bounce_five_times(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for _ in range(5):
        _kill(ctx, names)
        _start(ctx, names)


def _pause(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for name in names:
        ctx.cluster.signal(name, signal.SIGSTOP)


def _resume(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for name in names:
        ctx.cluster.signal(name, signal.SIGCONT)


def session_owner(ctx: FaultContext, name: str) -> int:
    """The session that owns the process's ephemeral znode: a broker's registration, the active
    controller's /controller."""
    info = ctx.cluster.processes[name]
    path = schema.broker_path(info.instance_id) if info.role == "broker" else schema.CONTROLLER
    stat = ctx.zk.kazoo.exists(path)
    assert stat is not None and stat.ephemeralOwner, f"{name} owns no ephemeral znode at {path}"
    return stat.ephemeralOwner


def _expire_sessions(ctx: FaultContext, names: tuple[str, ...]) -> None:
    for name in names:
        expire_session(ctx.cluster.zookeeper_endpoint, session_owner(ctx, name))


def _nothing(ctx: FaultContext, names: tuple[str, ...]) -> None:
    pass


PROCESS_KINDS = ("leader", "follower", "controller")

FAULTS = {fault.name: fault for fault in (
    Fault("clean-stop", PROCESS_KINDS, _stop, _start, lambda ctx: 1.0),
    Fault("kill-9", PROCESS_KINDS, _kill, _start, lambda ctx: ctx.session_s + 1.0),
    Fault("hard-bounce-x5", PROCESS_KINDS, _bounce_five_times, _nothing, lambda ctx: 0.0),
    # A "GC pause": frozen past the session timeout, so the cluster moves on, then woken as a zombie.
    Fault("pause-past-session", PROCESS_KINDS, _pause, _resume, lambda ctx: ctx.session_s + 2.0),
    Fault("session-expiry", PROCESS_KINDS, _expire_sessions, _nothing, lambda ctx: 1.0),
    Fault("kill-all", ("all",), _kill, _start, lambda ctx: 2.0),
)}


def cells() -> list[tuple[str, str]]:
    """Every (fault, target kind) of the matrix, in a fixed order."""
    return [(fault.name, kind) for fault in FAULTS.values() for kind in fault.kinds]
