"""decide(state, event, rng) -> Plan: the controller's one pure entry point.

Theory of operation
-------------------
Deciding apart from applying, as KRaft does, on one event loop.  The controller loop
takes one event at a time and calls :func:`decide`; it reads ``state`` and
returns a :class:`~.plan.Plan`, changing nothing.  The executor persists the
plan's ZooKeeper writes, calls :func:`~.apply.apply` for the next state, then
sends the broker requests, in the order of the plan's steps (``steps.py``).

Each event type has one handler in ``handlers/``; every handler works through a
:class:`~.builder.PlanBuilder`, which enforces the rules common to all plans.
``Startup`` is special only in that its plan first loads the snapshot and is
decided against it.

A controller that has not taken its seat (``controller_epoch`` 0) decides
nothing except ``Startup``; RPC events are answered NOT_CONTROLLER.

``rng`` is part of the signature so that decisions may use randomness only
through a seeded source, never ``random`` itself; no current decision needs it -- replica
placement happens in the gateway, through ``placement.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .builder import PlanBuilder
from .errors import ErrorCode
from .events import (
    AlterPartitionReceived,
    AutoRebalanceTick,
    BrokerResyncRequested,
    BrokersChanged,
    ControlledShutdownRequested,
    Event,
    IsrChanged,
    LogDirsOfflineReported,
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
from .handlers.alter_partition import on_alter_partition
from .handlers.brokers import on_broker_resync, on_brokers_changed
from .handlers.deletion import on_replica_stopped, on_topic_deletion_requested
from .handlers.elections import on_auto_rebalance, on_preferred_election, on_unclean_election
from .handlers.log_dirs import on_log_dirs_offline
from .handlers.reassignment import on_isr_changed, on_reassignment_requested
from .handlers.shutdown import on_controlled_shutdown
from .handlers.startup import startup_builder
from .handlers.topics import on_partitions_added, on_topic_config_changed, on_topics_created
from .model import ControllerState
from .plan import (
    AlterPartitionReply,
    ControlledShutdownReply,
    LogDirsOfflineReply,
    PartitionResult,
    PartitionResultsReply,
    Plan,
)
from .steps import Answer, Apply

if TYPE_CHECKING:
    import random

_HANDLERS: dict[type, Callable[[PlanBuilder, object], None]] = {
    BrokersChanged: on_brokers_changed,
    BrokerResyncRequested: on_broker_resync,
    TopicsCreated: on_topics_created,
    PartitionsAdded: on_partitions_added,
    TopicDeletionRequested: on_topic_deletion_requested,
    TopicDeletionReplicaStopped: on_replica_stopped,
    ReassignmentRequested: on_reassignment_requested,
    IsrChanged: on_isr_changed,
    AlterPartitionReceived: on_alter_partition,
    ControlledShutdownRequested: on_controlled_shutdown,
    LogDirsOfflineReported: on_log_dirs_offline,
    PreferredElectionRequested: on_preferred_election,
    UncleanElectionRequested: on_unclean_election,
    AutoRebalanceTick: on_auto_rebalance,
    TopicConfigChanged: on_topic_config_changed,
}


def decide(state: ControllerState, event: Event, rng: random.Random) -> Plan:
    """The plan for ``event`` given ``state``; ``state`` is not modified."""
    if isinstance(event, Startup):
        return startup_builder(state, event).finish()
    handler = _HANDLERS.get(type(event))
    if handler is None:
        raise TypeError(f"not a controller event: {event!r}")
    if state.controller_epoch == 0:
        return Plan(steps=(Apply(), Answer(_not_controller(event))))
    builder = PlanBuilder(state)
    handler(builder, event)
    return builder.finish()


def _not_controller(event: Event):
    message = "this controller has not taken its seat"
    if isinstance(event, AlterPartitionReceived):
        return AlterPartitionReply(ErrorCode.NOT_CONTROLLER, message, ())
    if isinstance(event, ControlledShutdownRequested):
        return ControlledShutdownReply(ErrorCode.NOT_CONTROLLER, message, ())
    if isinstance(event, LogDirsOfflineReported):
        return LogDirsOfflineReply(ErrorCode.NOT_CONTROLLER, message)
    partitions = getattr(event, "partitions", None) or getattr(event, "targets", None) or ()
    if partitions and isinstance(event, (PreferredElectionRequested, UncleanElectionRequested,
                                         ReassignmentRequested)):
        return PartitionResultsReply(tuple(
            PartitionResult(tp, ErrorCode.NOT_CONTROLLER, message) for tp in sorted(partitions)))
    return None
