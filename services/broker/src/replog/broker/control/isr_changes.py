"""ISR changes: the periodic shrink check and AlterPartition to the controller.

Theory of operation (docs/architecture.md, "High watermark and ISR"; core/leader.py, core/isr/isr_proposal.py;
Kafka's isr-expiration task and AlterPartitionManager):

One thread. Every `replica_lag_time_max_ms / 2` it asks each led partition's
core, in one step, whether a follower fell out of sync and which proposal is
pending (`leader_side.isr_check`); expansions come from the follower-fetch
path's effects (`submit`). Either way the core holds the one
pending proposal per partition; this thread only carries it. A round sends the
`proposal_to_resend` of every partition queued, many partitions in one
AlterPartition request to the controller named in /controller, and applies
each answer through the core, which decides what it proves (accepted, newer
state, dropped, still pending). The ISR changes only when the controller
accepted; until then the leader computes its HW over the maximal ISR.

No answer is not a refusal: after a transport failure, NOT_CONTROLLER or any
request-level error the same proposals are sent again, unchanged, after a
back-off (a controller failover takes a few seconds; the back-off is capped).
The periodic round also resends any pending proposal that was not answered,
so nothing depends on a single message arriving.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from opentelemetry import trace

from replog.broker.control.controller_link import AlterPartitionReply, ControllerLink, ControllerUnavailable
from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr.isr_answer import IsrCommitted, IsrRefreshed, ProposalDropped, ProposalStillPending
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal, IsrChangeKind
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import apply_alter_partition_answer, isr_check, proposal_to_resend
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.thread_guard import guarded_round
from replog.common import telemetry
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)
tracer = trace.get_tracer("replog.broker")

RETRY_BACKOFF_MS_MIN = 100
RETRY_BACKOFF_MS_MAX = 2000
PROPOSALS_PER_REQUEST_MAX = 1000


class IsrChangeSender:
    def __init__(
        self,
        *,
        broker_id: int,
        broker_epoch_of: Callable[[], int],
        hosted: Callable[[], list[HostedPartition]],
        lookup: Callable[[TopicPartition], HostedPartition | None],
        controller: ControllerLink,
        replica_lag_time_max_ms: int,
        clock: Clock,
        metrics: BrokerMetrics,
    ) -> None:
        self._broker_id = broker_id
        self._broker_epoch_of = broker_epoch_of
        self._hosted = hosted
        self._lookup = lookup
        self._controller = controller
        self._lag_ms = replica_lag_time_max_ms
        self._check_interval_ms = max(replica_lag_time_max_ms // 2, 50)
        self._clock = clock
        self._metrics = metrics
        self._cond = threading.Condition()
        self._queued: dict[TopicPartition, None] = {}
        self._retry_at_ms = 0
        self._next_check_ms = 0
        self._backoff_ms = 0
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="isr-changes", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=1)  # a daemon thread; it may sit in an RPC to a stopping controller

    def submit(self, topic_partition: TopicPartition) -> None:
        """A proposal is pending for `topic_partition` (an expansion from a follower fetch)."""
        with self._cond:
            self._queued[topic_partition] = None
            self._cond.notify_all()

    # --- the loop -----------------------------------------------------------------------

    def _run(self) -> None:
        self._next_check_ms = self._clock.monotonic_ms() + self._check_interval_ms
        while not self._stopped:
            guarded_round(self._round)

    def _round(self) -> None:
        with self._cond:
            while not self._stopped:
                now_ms = self._clock.monotonic_ms()
                if now_ms >= self._next_check_ms or (self._queued and now_ms >= self._retry_at_ms):
                    break
                wake_ms = self._next_check_ms if not self._queued else min(self._next_check_ms, self._retry_at_ms)
                self._cond.wait(max(wake_ms - now_ms, 1) / 1000)
            if self._stopped:
                return
        if self._clock.monotonic_ms() >= self._next_check_ms:
            self._next_check_ms = self._clock.monotonic_ms() + self._check_interval_ms
            self._periodic_check()
        if self._clock.monotonic_ms() >= self._retry_at_ms:
            self._send_round()

    def _periodic_check(self) -> None:
        now_ms = self._clock.monotonic_ms()
        shrinks: list[str] = []
        for hosted in self._hosted():
            shrink, to_send = isr_check(hosted, now_ms=now_ms, replica_lag_time_max_ms=self._lag_ms)
            if shrink is not None:
                shrinks.append(f"{hosted.topic_partition} to {list(shrink.new_isr)}")
            if to_send is not None:
                with self._cond:
                    self._queued[hosted.topic_partition] = None
        if shrinks:
            log.info("proposing ISR shrinks for %d partition(s) with followers out of sync: %s%s", len(shrinks),
                     ", ".join(shrinks[:5]), f" and {len(shrinks) - 5} more" if len(shrinks) > 5 else "")

    def _send_round(self) -> None:
        with self._cond:
            queued = list(self._queued)[:PROPOSALS_PER_REQUEST_MAX]
            for topic_partition in queued:
                del self._queued[topic_partition]
        proposals: dict[TopicPartition, tuple[HostedPartition, AlterPartitionProposal]] = {}
        for topic_partition in queued:
            hosted = self._lookup(topic_partition)
            proposal = None if hosted is None else proposal_to_resend(hosted)
            if proposal is not None:
                proposals[topic_partition] = (hosted, proposal)
        if not proposals:
            return
        reply = self._send(proposals)
        if reply is None:
            self._retry_later(proposals)
            return
        self._backoff_ms = 0
        retry = {}
        summary = _AnswerSummary()
        for topic_partition, answer, error_message in reply.answers:
            entry = proposals.get(topic_partition)
            if entry is not None and self._apply(topic_partition, *entry, answer, error_message, summary):
                retry[topic_partition] = entry
        summary.log()
        if retry:
            self._retry_later(retry)

    def _send(self, proposals) -> AlterPartitionReply | None:
        with tracer.start_as_current_span("broker.alter_partition", attributes={
            "partitions": [str(tp) for tp in proposals], "partition.count": len(proposals),
        }) as span:
            try:
                reply = self._controller.alter_partition(self._broker_id, self._broker_epoch_of(),
                                                         [p for _, p in proposals.values()])
            except ControllerUnavailable as exc:
                telemetry.mark_failed(span, type(exc).__name__, str(exc))
                log.info("AlterPartition not delivered (%s); will resend %d proposal(s)", exc, len(proposals))
                return None
            if reply.error_code is not ErrorCode.NONE:
                telemetry.mark_failed(span, reply.error_code.name, f"{reply.error_code.name}: {reply.error_message}")
                log.info("AlterPartition refused as a whole: %s %s; will resend", reply.error_code.name,
                         reply.error_message)
                return None
            return reply

    def _apply(self, topic_partition: TopicPartition, hosted: HostedPartition, proposal: AlterPartitionProposal,
               answer: AlterPartitionAnswer, error_message: str, summary: _AnswerSummary) -> bool:
        """Apply one answer; True when the proposal must be sent again."""
        outcome = apply_alter_partition_answer(hosted, proposal, answer)  # its effects complete waiting produces
        if isinstance(outcome, IsrCommitted):
            (self._metrics.isr_expands if outcome.kind is IsrChangeKind.EXPAND else self._metrics.isr_shrinks).inc()
            summary.add(f"ISR {outcome.kind.value} accepted",
                        f"{topic_partition} now {list(outcome.isr)} (partition epoch {outcome.partition_epoch})")
        elif isinstance(outcome, IsrRefreshed):
            summary.add("adopted the controller's newer ISR",
                        f"{topic_partition} now {list(outcome.isr)} (partition epoch {outcome.partition_epoch})")
        elif isinstance(outcome, ProposalDropped | ProposalStillPending):
            self._metrics.failed_isr_updates.inc()
            summary.add(f"refused with {outcome.error_code.name}",
                        f"{topic_partition} proposal {list(proposal.new_isr)}: {error_message}")
            return isinstance(outcome, ProposalStillPending) and outcome.resend
        return False

    def _retry_later(self, proposals) -> None:
        self._metrics.failed_isr_updates.inc(len(proposals))
        self._backoff_ms = min(max(self._backoff_ms * 2, RETRY_BACKOFF_MS_MIN), RETRY_BACKOFF_MS_MAX)
        with self._cond:
            self._retry_at_ms = self._clock.monotonic_ms() + self._backoff_ms
            for topic_partition in proposals:
                self._queued[topic_partition] = None


class _AnswerSummary:
    """One log line per kind of answer in an AlterPartition response, with a few examples: after a
    broker failure thousands of partitions change at once, and a line each would cost more than the change."""

    EXAMPLES = 3

    def __init__(self) -> None:
        self._by_kind: dict[str, list[str]] = {}
        self._counts: dict[str, int] = {}

    def add(self, kind: str, example: str) -> None:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        examples = self._by_kind.setdefault(kind, [])
        if len(examples) < self.EXAMPLES:
            examples.append(example)

    def log(self) -> None:
        for kind, count in self._counts.items():
            examples = "; ".join(self._by_kind[kind])
            more = f"; and {count - len(self._by_kind[kind])} more" if count > len(self._by_kind[kind]) else ""
            log.info("AlterPartition: %s for %d partition(s): %s%s", kind, count, examples, more)
