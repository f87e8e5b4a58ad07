"""Controlled shutdown: before stopping, ask the controller to move leadership away
(docs/operations.md, "Controlled shutdown").

The controller answers after it has sent the LeaderAndIsr that makes this
broker a follower everywhere it can, so when the call returns NONE with no
remaining partitions, clients already see only retriable NOT_LEADER from us.
Bounded: a few attempts with a back-off, all within `DEADLINE_S`, well inside
a process manager's grace before SIGKILL (docs/perf/controlled-shutdown.md); if
the controller cannot be reached, or is itself stopping, the broker stops
anyway and the controller handles it as a failure.
"""

from __future__ import annotations

import logging
import time

from opentelemetry import trace

from replog.broker.control.controller_link import ControllerLink, ControllerUnavailable
from replog.broker.core.errors import ErrorCode
from replog.common import telemetry

log = logging.getLogger(__name__)
tracer = trace.get_tracer("replog.broker")

ATTEMPTS_MAX = 3
BACKOFF_S = 0.5
RPC_TIMEOUT_S_MAX = 4.0
DEADLINE_S = 8.0


def controlled_shutdown(controller: ControllerLink, broker_id: int, broker_epoch: int) -> bool:
    """True when the controller moved every partition it could; False after giving up."""
    deadline_s = time.monotonic() + DEADLINE_S
    with tracer.start_as_current_span("broker.controlled_shutdown", attributes={"broker.id": broker_id}) as span:
        for attempt in range(1, ATTEMPTS_MAX + 1):
            remaining_s = deadline_s - time.monotonic()
            if remaining_s <= 0.1:
                break
            try:
                reply = controller.controlled_shutdown(broker_id, broker_epoch,
                                                       timeout_s=min(RPC_TIMEOUT_S_MAX, remaining_s))
            except ControllerUnavailable as exc:
                log.info("controlled shutdown attempt %d: %s", attempt, exc)
            else:
                remaining = [str(tp) for tp in reply.remaining]
                if reply.error_code is ErrorCode.NONE and not remaining:
                    log.info("controlled shutdown done after %d attempt(s)", attempt)
                    span.set_attribute("attempts", attempt)
                    return True
                log.info("controlled shutdown attempt %d: %s %s; still leading %s", attempt, reply.error_code.name,
                         reply.error_message, remaining)
            time.sleep(BACKOFF_S)
        span.set_attribute("gave_up", True)
        telemetry.mark_failed(span, "gave_up", f"controlled shutdown gave up after {attempt} attempt(s)")
        log.warning("controlled shutdown gave up after %d attempt(s); stopping anyway", attempt)
        return False
