"""What a controller event did, told to the metrics, the log and its span (used by event_loop.py)."""

from __future__ import annotations

import logging
import time

from replog.controller.adapters import metrics
from replog.controller.core import events as ev
from replog.controller.core.model import ControllerState
from replog.controller.core.plan import Plan

log = logging.getLogger("replog.controller.adapters.event_loop")  # the event loop's lines, wherever written


def record_metrics(plan: Plan, state: ControllerState, started: float) -> None:
    """Count what the event did (elections, ISR changes) and log the elections that may have lost records."""
    facts = plan.metrics
    if facts.leader_elections:
        metrics.LEADER_ELECTIONS.inc(facts.leader_elections)
        metrics.LEADER_ELECTION_S.observe(time.monotonic() - started)
    if facts.unclean_leader_elections:
        metrics.UNCLEAN_LEADER_ELECTIONS.inc(facts.unclean_leader_elections)
        log.warning("unclean leader election of %s: each has a leader from outside its ISR, and records "
                    "acknowledged before may be lost", _names(facts.unclean_partitions))
    if facts.lossy_leader_elections:
        metrics.LOSSY_LEADER_ELECTIONS.inc(len(facts.lossy_leader_elections))
        for tp, leader in facts.lossy_leader_elections:
            log.error("%s: elected broker %d, which lost committed records of it in an unclean shutdown, as no "
                      "other ISR member could lead: those records are lost", tp, leader)
    metrics.ISR_SHRINKS.inc(facts.isr_shrinks)
    metrics.ISR_EXPANDS.inc(facts.isr_expands)
    metrics.FAILED_ISR_UPDATES.inc(facts.failed_isr_updates)
    metrics.OFFLINE_PARTITIONS.set(state.offline_partition_count)
    metrics.GLOBAL_PARTITIONS.set(len(state.assignments))


def describe(span, state: ControllerState, event, plan: Plan) -> None:
    """Attributes that explain the event in its trace."""
    changed = {d.partition for r in plan.leader_and_isr for d in r.partitions}
    span.set_attribute("partitions.affected", len(changed))
    span.set_attribute("leader_elections", plan.metrics.leader_elections)
    if plan.metrics.unclean_partitions:
        span.set_attribute("unclean_leader_elections", _names(plan.metrics.unclean_partitions))
    if isinstance(event, ev.BrokersChanged):
        before, after = set(state.live_brokers), set(event.live)
        span.set_attribute("brokers.dead", sorted(before - after))
        span.set_attribute("brokers.new", sorted(after - before))
    if isinstance(event, (ev.ControlledShutdownRequested, ev.LogDirsOfflineReported)):
        span.set_attribute("broker.id", event.broker_id)
    if isinstance(event, ev.ControlledShutdownRequested) and event.partitions:
        span.set_attribute("resigned_partitions", _names(event.partitions))  # a running broker's damaged replicas


def _names(partitions) -> list[str]:
    return [f"{tp.topic}-{tp.partition}" for tp in partitions]
