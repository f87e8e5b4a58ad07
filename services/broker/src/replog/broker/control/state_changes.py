"""LeaderAndIsr and StopReplica, applied: the core decides per partition, this runs the effects.

Theory of operation (docs/architecture.md, "Data flow"; seed ReplicaManager
`becomeLeaderOrFollower`, `stopReplicas`; core/partition.py):

For each partition of a LeaderAndIsr (already fenced by controller and broker
epoch in the servicer) the replica's core decides: refuse (stale leader or
partition epoch), nothing to do, or apply with an ordered tuple of effects.
This module runs them after the partition lock is released:
- StopFetcher / StartFetcher: move the partition between replica fetchers
  (a follower starts at its log end with its last epoch; the leader's
  diverging-epoch answer drives any truncation);
- AssignLeaderEpochStart: nothing; `PartitionLog.append_as_leader` stamps the
  epoch cache with the first batch of the epoch (see the effect's docstring);
- CompleteDelayedOperations: nothing here; the partition's own effects
  re-check its delayed produces once its lock is released (consequences.py);
- DeleteLog (StopReplica): already done under the lock; forget the replica.

With `init` (sent on controller failover and broker registration, listing every
replica the broker hosts) local replicas not listed are stopped and deleted.
Before an INIT the controller sends the digest of what it would list
(`confirm_replicas`, `replog.common.state_digest`); when the hosted replicas
have the same digest, the INIT would change nothing and is not sent.

Tracing: the partitions becoming leaders are applied inside one
`broker.become_leader` span, the rest inside `broker.become_follower`, each a
child of the controller's span carried in the request metadata; fetchers that
start or move are a `broker.fetcher_restart` span per leader, whose context the
fetcher keeps so a later truncation joins the same trace.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace

from replog.broker.control.topic_configs import TopicConfigs
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.partition import (
    Applied,
    DeleteLog,
    LeaderAndIsrDecision,
    StartFetcher,
    StopFetcher,
)
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.broker.replication.fetcher_manager import FetcherManager
from replog.broker.runtime.turn import Turn
from replog.common import gc_policy, state_digest
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)
tracer = trace.get_tracer("replog.broker")

FREEZE_AFTER_DECISIONS = 500  # a LeaderAndIsr this large freezes what it built (gc_policy.paused)


class PartitionResult(NamedTuple):
    """One partition's answer to a controller request (a named tuple: thousands per failover request)."""

    topic_partition: TopicPartition
    error_code: ErrorCode
    message: str = ""


@dataclass(frozen=True)
class StopRequest:
    topic_partition: TopicPartition
    leader_epoch: int
    delete: bool


class ReplicaStateChanges:
    def __init__(
        self,
        *,
        broker_id: int,
        replicas: ReplicaManager,
        fetchers: FetcherManager,
        topic_configs: TopicConfigs,
        now_ms: Callable[[], int],
        turn: Turn,
    ) -> None:
        self._turn = turn
        self._broker_id = broker_id
        self._replicas = replicas
        self._fetchers = fetchers
        self._topic_configs = topic_configs
        self._now_ms = now_ms
        self._lock = threading.Lock()  # one controller request at a time (Kafka's replicaStateChangeLock)
        # Partitions to stop fetching, removed from the fetchers in one call per batch (under _lock).
        self._unfetch: list[TopicPartition] = []
        self._shutting_down = False

    def leader_and_isr(
        self, decisions: list[LeaderAndIsrDecision], *, init: bool, parent: otel_context.Context | None
    ) -> list[PartitionResult]:
        with self._lock:
            # New leader epochs first, with their fetchers: clients and followers wait for those,
            # while ISR-only updates (a dead follower leaving the ISR) wait for nobody. After a
            # broker failure the controller's request holds both (docs/perf/leader-and-isr-batch.md).
            new_epochs, same_epochs = self._new_epochs_first(decisions)
            # A collection mid-batch scanned every replica; none runs inside. A large batch's state
            # then lives long, and is frozen rather than scanned by the next collections
            # (docs/perf/gc-freeze.md).
            with gc_policy.paused(freeze=len(decisions) >= FREEZE_AFTER_DECISIONS):
                results = self._apply_batch(new_epochs, parent) + self._apply_batch(same_epochs, parent)
            if init:
                self._delete_unlisted({d.topic_partition for d in decisions})
            leading = sum(1 for d in decisions if d.leader_id == self._broker_id)
            _log_summary("LeaderAndIsr", results, extra=f"{leading} to lead, {len(decisions) - leading} to follow, "
                         f"{len(new_epochs)} at a new leader epoch"
                         + (", init" if init else ""))
            return results

    def _new_epochs_first(self, decisions: list[LeaderAndIsrDecision]):
        new_epochs, same_epochs = [], []
        for decision in decisions:
            hosted = self._replicas.get(decision.topic_partition)
            same = hosted is not None and hosted.replica.state.leader_epoch == decision.leader_epoch
            (same_epochs if same else new_epochs).append(decision)
        return new_epochs, same_epochs

    def _apply_batch(self, decisions: list[LeaderAndIsrDecision], parent) -> list[PartitionResult]:
        leading = [d for d in decisions if d.leader_id == self._broker_id]
        following = [d for d in decisions if d.leader_id != self._broker_id]
        results: list[PartitionResult] = []
        starts: list[tuple[TopicPartition, StartFetcher]] = []
        if leading:
            with self._span("broker.become_leader", leading, parent):
                results += self._apply_all(leading, starts)
                self._stop_fetching()
        if following:
            with self._span("broker.become_follower", following, parent) as span:
                results += self._apply_all(following, starts)
                self._stop_fetching()  # before the starts: a partition may move to another leader
                if self._shutting_down:
                    starts = []
                self._start_fetchers(starts)
                span.set_attribute("fetchers.started", len(starts))
        return results

    def _apply_all(self, decisions: list[LeaderAndIsrDecision], starts: list) -> list[PartitionResult]:
        # One clock reading and one config watch per topic for the batch, not per partition: after a
        # broker failure a batch holds thousands of decisions (docs/perf/leader-and-isr-batch.md).
        now_ms = self._now_ms()
        watched: set[str] = set()
        return [self._apply(decision, starts, now_ms, watched) for decision in decisions]

    def _stop_fetching(self) -> None:
        if self._unfetch:
            self._fetchers.remove(self._unfetch)
            self._unfetch = []

    def confirm_replicas(self, encoded_digest: bytes) -> bool:
        """True when the hosted replicas have the controller's digest: an INIT LeaderAndIsr would
        delete nothing and change no leadership (see `state_digest`), so it need not be sent."""
        with self._lock:
            held = state_digest.Digest.of(
                state_digest.replica_term(s.topic_partition.topic, s.topic_partition.partition, s.leader_id,
                                          s.leader_epoch, s.partition_epoch, self._broker_id)
                for s in (hosted.replica.state for hosted in self._replicas.hosted()))
            matched = state_digest.matches(encoded_digest, held)
        log.info("LeaderAndIsr confirm: %d replica(s) %s the controller's state", held.count,
                 "match" if matched else "do not match")
        return matched

    def begin_shutdown(self) -> None:
        """This broker is in controlled shutdown: partitions it hands over make it a follower that
        does not fetch. It exits in a moment and cannot rejoin an ISR anyway (KIP-841); fetching
        would only load the new leaders while they take over."""
        with self._lock:
            self._shutting_down = True

    def stop_replicas(self, requests: list[StopRequest]) -> list[PartitionResult]:
        with self._lock:
            with self._turn:  # a stop may delete a log: system calls per partition (turn.py)
                results = [self._stop(request) for request in requests]
            self._stop_fetching()
            deleting = sum(1 for r in requests if r.delete)
            _log_summary("StopReplica", results, extra=f"{deleting} to delete" if deleting else "")
            return results

    # --- internals -----------------------------------------------------------------------

    @staticmethod
    def _span(name: str, decisions: list[LeaderAndIsrDecision], parent: otel_context.Context | None):
        return tracer.start_as_current_span(name, context=parent, attributes={
            "partitions": [str(d.topic_partition) for d in decisions],
            "leader_epochs": [d.leader_epoch for d in decisions],
            "partition.count": len(decisions),
        })

    def _apply(self, decision: LeaderAndIsrDecision, starts: list, now_ms: int, watched: set[str]) -> PartitionResult:
        topic_partition = decision.topic_partition
        if self._broker_id not in decision.replicas:
            return PartitionResult(topic_partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"broker {self._broker_id} is not assigned {topic_partition}")
        offline_dir = self._replicas.offline_directory_of(topic_partition)
        if offline_dir is not None:  # its directory went offline at start: never created afresh elsewhere
            return _in_offline_dir(topic_partition, offline_dir.path)
        try:  # an OSError took the chosen directory offline (replica_manager.py)
            hosted = self._replicas.get_or_create(topic_partition)
        except OSError as exc:
            return PartitionResult(topic_partition, ErrorCode.STORAGE_ERROR, str(exc))
        if hosted.dir_failures.offline:  # stopped with its directory: it neither leads nor follows
            return _in_offline_dir(topic_partition, hosted.dir_failures.log_dir)
        if topic_partition.topic not in watched:
            watched.add(topic_partition.topic)
            self._topic_configs.watch(topic_partition.topic)
        outcome, _ = hosted.apply_leader_and_isr(decision, now_ms, self._topic_configs.min_insync_replicas)
        if isinstance(outcome, Refusal):
            return PartitionResult(topic_partition, outcome.code, outcome.reason)
        if isinstance(outcome, Applied):
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s: %s at leader epoch %d (leader %d, ISR %s, partition epoch %d)", topic_partition,
                          outcome.change.value, decision.leader_epoch, decision.leader_id, list(decision.isr),
                          decision.partition_epoch)
            self._run_effects(topic_partition, outcome, starts)
        return PartitionResult(topic_partition, ErrorCode.NONE)

    def _run_effects(self, topic_partition: TopicPartition, outcome: Applied, starts: list) -> None:
        for effect in outcome.effects:
            if isinstance(effect, StopFetcher):
                self._unfetch.append(topic_partition)
            elif isinstance(effect, StartFetcher):
                starts.append((topic_partition, effect))
            elif isinstance(effect, DeleteLog):
                self._replicas.forget(topic_partition)
                if not self._replicas.hosts_topic(topic_partition.topic):
                    self._topic_configs.unwatch(topic_partition.topic)
            # AssignLeaderEpochStart: the log stamps its epoch cache on the epoch's first append.
            # CompleteDelayedOperations: the partition's own effects did it (replicas/consequences.py).

    def _start_fetchers(self, starts: list[tuple[TopicPartition, StartFetcher]]) -> None:
        by_leader: dict[int, list[tuple[TopicPartition, StartFetcher]]] = {}
        for topic_partition, effect in starts:
            by_leader.setdefault(effect.leader_id, []).append((topic_partition, effect))
        for leader_id, items in sorted(by_leader.items()):
            with tracer.start_as_current_span("broker.fetcher_restart", attributes={
                "leader.id": leader_id,
                "partitions": [str(tp) for tp, _ in items],
                "leader_epochs": [e.leader_epoch for _, e in items],
            }):
                self._fetchers.add(leader_id, [(tp, effect.leader_epoch) for tp, effect in items],
                                   otel_context.get_current())

    def _stop(self, request: StopRequest) -> PartitionResult:
        topic_partition = request.topic_partition
        hosted = self._replicas.get(topic_partition)
        offline_dir = self._replicas.offline_directory_of(topic_partition)
        if request.delete and offline_dir is not None:  # offline since start: as below
            return _in_offline_dir(topic_partition, offline_dir.path)
        if hosted is None:
            self._unfetch.append(topic_partition)
            return PartitionResult(topic_partition, ErrorCode.NONE, "not hosted here")
        if request.delete and hosted.dir_failures.offline:  # nothing is written there; a restart deletes it
            return _in_offline_dir(topic_partition, hosted.dir_failures.log_dir)
        outcome = hosted.stop(leader_epoch=request.leader_epoch, delete=request.delete)
        if isinstance(outcome, Refusal):
            return PartitionResult(topic_partition, outcome.code, outcome.reason)
        if isinstance(outcome, Applied):
            log.debug("%s: stopped%s", topic_partition, " and deleted" if request.delete else "")
            self._unfetch.append(topic_partition)
            self._run_effects(topic_partition, outcome, [])
        return PartitionResult(topic_partition, ErrorCode.NONE)

    def _delete_unlisted(self, listed: set[TopicPartition]) -> None:
        unlisted = [tp for tp in self._replicas.topic_partitions() if tp not in listed]
        self._fetchers.remove(unlisted)
        for topic_partition in unlisted:
            log.info("%s: not in the controller's INIT LeaderAndIsr; stopping and deleting", topic_partition)
            self._replicas.delete(topic_partition)
            if not self._replicas.hosts_topic(topic_partition.topic):
                self._topic_configs.unwatch(topic_partition.topic)


def _in_offline_dir(topic_partition: TopicPartition, log_dir) -> PartitionResult:
    """The answer for a replica whose log directory is offline: it neither leads, follows nor is deleted."""
    return PartitionResult(topic_partition, ErrorCode.STORAGE_ERROR,
                           f"{topic_partition} is in the offline log directory {log_dir}")


def _log_summary(what: str, results: list[PartitionResult], *, extra: str) -> None:
    """One line per controller request (a line per partition cost more than applying it,
    docs/perf/controller-answers.md). Which partitions were refused and why is the servicer's
    refusal line, with the caller and rate-limited (entrypoints/control_servicer.py)."""
    refused = sum(1 for r in results if r.error_code != ErrorCode.NONE)
    detail = f" ({extra})" if extra else ""
    tail = f", refused for {refused}" if refused else ""
    log.info("%s applied to %d partition(s)%s%s", what, len(results) - refused, detail, tail)
