"""A rebalance as one trace: the coordinator's span tree for each group's way from one stable state to the next.

Theory of operation. The coordinator calls `observe(group)` under its lock after anything that may
move a group's state. When a group enters PreparingRebalance a root span `group.rebalance` starts,
with a `group.join_phase` child; when it enters CompletingRebalance the join phase ends (the new
generation, its members and protocol are known) and a `group.sync_phase` child starts; when the
group is Stable, Empty or Dead again the phase and the root end, the root carrying the outcome. A
rebalance that starts over (a member left during the sync phase) opens a new join phase under the
same root. Each member's JoinGroup or SyncGroup call handled here is a SERVER span named by
OpenTelemetry's RPC conventions (`replog.v1.GroupService/JoinGroup`, with `rpc.*` attributes:
replog.common.rpc_spans), a child of the root (a call may complete a phase, so it belongs to the
rebalance rather than to either phase; a follower's SyncGroup that arrives after the leader's
completed the rebalance is a child of that ended root); the caller's own trace context, when its
request carried one (W3C traceparent in the gRPC metadata, as every replog RPC does), is attached
as a link, so a traced client finds the rebalance its call took part in. A call answered with an
error code has status ERROR and `error.type` naming the code.

Attributes: `group.id`, `group.generation`, `group.members`, `group.protocol`, and on the root
`group.outcome` (the state it ended in); every span also has the messaging conventions'
`messaging.system` ("replog") and `messaging.consumer.group.name`. Spans only observe: nothing here
changes a group.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry import trace

from replog.broker.groups.core.answers import JoinAnswer, SyncAnswer
from replog.broker.groups.core.group import Group
from replog.broker.groups.core.model import GroupState
from replog.common import rpc_spans, telemetry
from replog.v1 import group_pb2

tracer = trace.get_tracer("replog.broker")
SERVICE = group_pb2.DESCRIPTOR.services_by_name["GroupService"].full_name
MESSAGING_SYSTEM = "replog"

_REBALANCING = (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE)
_PHASES = {GroupState.PREPARING_REBALANCE: "group.join_phase", GroupState.COMPLETING_REBALANCE: "group.sync_phase"}


@dataclass
class _Open:
    root: trace.Span
    phase: trace.Span
    phase_state: GroupState


def _attributes(group: Group) -> dict:
    return {"group.id": group.group_id, "group.generation": group.generation_id,
            "group.members": len(group.members), "group.protocol": group.protocol_name,
            **_messaging(group.group_id)}


def _messaging(group_id: str) -> dict:
    return {"messaging.system": MESSAGING_SYSTEM, "messaging.consumer.group.name": group_id}


class RebalanceTraces:
    """The open rebalance span tree of each group (call every method under the coordinator's lock)."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._last: dict[str, trace.Span] = {}  # each group's latest ended root: late SyncGroups belong to it

    def observe(self, group: Group) -> None:
        held = self._open.get(group.group_id)
        state = group.state
        if state in _REBALANCING:
            if held is None:
                root = tracer.start_span("group.rebalance", attributes=_attributes(group))
                self._open[group.group_id] = _Open(root, self._phase(root, group), state)
            elif held.phase_state is not state:
                held.phase.set_attributes(_attributes(group))
                held.phase.end()
                held.phase, held.phase_state = self._phase(held.root, group), state
            return
        if held is not None:
            del self._open[group.group_id]
            held.phase.set_attributes(_attributes(group))
            held.phase.end()
            held.root.set_attributes(_attributes(group))
            held.root.set_attribute("group.outcome", state.value)
            held.root.end()
            self._last[group.group_id] = held.root

    def forget(self, group_id: str, why: str) -> None:
        """End a group's open spans when the coordinator drops the group (it moved, or the broker stops)."""
        held = self._open.pop(group_id, None)
        self._last.pop(group_id, None)
        if held is not None:
            held.phase.end()
            held.root.set_attribute("group.outcome", why)
            held.root.end()

    def member_call(self, group_id: str, method: str, member_id: str, start_ns: int,
                    caller: otel_context.Context | None) -> trace.Span:
        """A span for one member's call (`method`: JoinGroup or SyncGroup), a child of the group's open
        rebalance (a root of its own when none is open). The caller ends it once the call is answered."""
        held = self._open.get(group_id)
        root = held.root if held is not None else self._last.get(group_id) if method == "SyncGroup" else None
        parent = trace.set_span_in_context(root) if root is not None else otel_context.Context()
        caller_span = trace.get_current_span(caller).get_span_context() if caller is not None else None
        links = [trace.Link(caller_span)] if caller_span is not None and caller_span.is_valid else []
        attributes = {"rpc.system": rpc_spans.RPC_SYSTEM, "rpc.service": SERVICE, "rpc.method": method,
                      "group.id": group_id, "group.member_id": member_id, **_messaging(group_id)}
        return tracer.start_span(rpc_spans.span_name(SERVICE, method), context=parent, kind=trace.SpanKind.SERVER,
                                 start_time=start_ns, links=links, attributes=attributes)

    @staticmethod
    def _phase(root: trace.Span, group: Group) -> trace.Span:
        return tracer.start_span(_PHASES[group.state], context=trace.set_span_in_context(root),
                                 attributes=_attributes(group))


def answered(span: trace.Span, answer: JoinAnswer | SyncAnswer) -> JoinAnswer | SyncAnswer:
    """End a member call's span with what it was answered; returns the answer."""
    generation_id = answer.generation_id if isinstance(answer, JoinAnswer) else -1
    span.set_attribute("group.generation", generation_id)
    if answer.error:
        telemetry.mark_failed(span, answer.error.name, f"{answer.error.name}: {answer.message}")
    span.end()
    return answer
