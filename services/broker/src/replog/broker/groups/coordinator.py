"""The group coordinator on a broker: the groups of the offsets partitions this broker leads.

Theory of operation. One lock guards every loaded partition's groups and offsets; the state
machine (core/group.py) runs under it and never does I/O. What an outcome asks is carried out after
the lock is released, in the order decide, persist, apply, answer: a snapshot or commit is appended
(acks=all, offsets_log.py), then applied, then the parked calls are answered. JoinGroup and
SyncGroup calls park on an `_Parked` until the state machine answers them (another member's call,
or the ticker).

The `groups-coordinator` thread polls every `TICK_MS`: it loads the offsets partitions this broker
has come to lead (calls for their groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile), unloads
those it no longer leads (parked calls answer NOT_COORDINATOR, so clients look again), and ticks
every group's sessions and rebalance deadlines. Polling leadership keeps the controller's request
path untouched; it adds at most one tick to a coordinator move.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.groups.core.answers import JoinAnswer, Outcome, SyncAnswer
from replog.broker.groups.core.group import Group
from replog.broker.groups.core.model import NO_GENERATION, CommittedOffset, GroupPolicy, GroupState, JoinRequest
from replog.broker.groups.core.offsets import OffsetTable
from replog.broker.groups.core.placement import offsets_partition
from replog.broker.groups.core.records import (
    GroupRecord,
    RecordFormatError,
    decode,
    group_key,
    group_value,
    offset_key,
    offset_value,
)
from replog.broker.groups.offsets_log import NotReady, OffsetsLog
from replog.broker.groups.rebalance_trace import RebalanceTraces, answered
from replog.broker.runtime.metrics import BrokerMetrics, GroupRow
from replog.common.clock import Clock
from replog.common.core.internal_topics import OFFSETS_TOPIC
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)

TICK_MS = 100
PARK_GRACE_MS = 5_000  # a parked call gives up this long after the rebalance timeout it was promised


@dataclass
class _Loaded:
    tp: TopicPartition
    leader_epoch: int
    offsets: OffsetTable = field(default_factory=OffsetTable)
    groups: dict[str, Group] = field(default_factory=dict)


class _Parked:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: JoinAnswer | SyncAnswer | None = None


class GroupCoordinator:
    def __init__(self, offsets_log: OffsetsLog, policy: GroupPolicy, clock: Clock,
                 offsets_partitions: Callable[[], int | None], metrics: BrokerMetrics | None = None) -> None:
        self._metrics = metrics
        self._log = offsets_log
        self._policy = policy
        self._clock = clock
        self._partitions = offsets_partitions  # the offsets topic's partition count, None when it does not exist
        self._lock = threading.Lock()
        self._loaded: dict[int, _Loaded] = {}
        self._loading: set[int] = set()
        self._parked: dict[tuple[str, str, str], _Parked] = {}
        self._traces = RebalanceTraces()  # guarded by _lock, as the groups it watches
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="groups-coordinator", daemon=True)

    # --- lifecycle ---

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self._lock:
            outcomes = [(g, g.unload()) for loaded in self._loaded.values() for g in loaded.groups.values()]
            self._loaded.clear()
            for group, _ in outcomes:
                self._traces.forget(group.group_id, "broker stopping")
        for group, outcome in outcomes:
            self._answer(group.group_id, outcome)

    # --- calls ---

    def locate(self, group_id: str) -> _Loaded | Refusal:
        """The loaded partition holding `group_id` (call under the lock)."""
        count = self._partitions()
        if not count:
            return Refusal(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"the topic {OFFSETS_TOPIC} does not exist yet")
        partition = offsets_partition(group_id, count)
        if partition in self._loading:
            return Refusal(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"loading {OFFSETS_TOPIC}-{partition}; retry")
        loaded = self._loaded.get(partition)
        if loaded is None:
            return Refusal(ErrorCode.NOT_COORDINATOR,
                           f"this broker does not lead {OFFSETS_TOPIC}-{partition}; call FindCoordinator again")
        return loaded

    def join(self, group_id: str, request: JoinRequest, caller=None) -> JoinAnswer:
        """A JoinGroup; `caller` is the request's trace context (rebalance_trace.py links to it)."""
        member_id = request.member_id or f"{request.client_id or 'member'}-{uuid.uuid4()}"
        parked, start_ns = _Parked(), time.time_ns()
        with self._lock:
            loaded = self.locate(group_id)
            if isinstance(loaded, Refusal):
                return JoinAnswer(member_id, loaded.code, loaded.reason)
            group = loaded.groups.get(group_id) or Group(group_id, self._policy)
            key = (group_id, member_id, "join")
            self._parked[key] = parked
            outcome = group.join(request, member_id, self._clock.monotonic_ms())
            if outcome.refusal:
                del self._parked[key]
                return JoinAnswer(member_id, outcome.refusal.code, outcome.refusal.reason)
            loaded.groups[group_id] = group
            self._traces.observe(group)
            span = self._traces.member_call(group_id, "JoinGroup", member_id, start_ns, caller)
        self._carry_out(loaded, group, outcome)
        return answered(span, self._await(key, parked, request.rebalance_timeout_ms, JoinAnswer))

    def sync(self, group_id: str, generation_id: int, member_id: str,
             assignments: dict[str, tuple[tuple[TopicPartition, ...], bytes]], caller=None) -> SyncAnswer:
        parked, start_ns = _Parked(), time.time_ns()
        key = (group_id, member_id, "sync")
        with self._lock:
            loaded, group = self._group(group_id, member_id)
            if isinstance(loaded, Refusal):
                return SyncAnswer(member_id, loaded.code, loaded.reason)
            self._parked[key] = parked
            outcome = group.sync(member_id, generation_id, assignments, self._clock.monotonic_ms())
            if outcome.refusal:
                del self._parked[key]
                return SyncAnswer(member_id, outcome.refusal.code, outcome.refusal.reason)
            timeout_ms = group.members[member_id].rebalance_timeout_ms
            span = self._traces.member_call(group_id, "SyncGroup", member_id, start_ns, caller)
        self._carry_out(loaded, group, outcome)
        return answered(span, self._await(key, parked, timeout_ms, SyncAnswer))

    def heartbeat(self, group_id: str, generation_id: int, member_id: str) -> Refusal | None:
        with self._lock:
            loaded, group = self._group(group_id, member_id)
            if isinstance(loaded, Refusal):
                return loaded
            return group.heartbeat(member_id, generation_id, self._clock.monotonic_ms())

    def leave(self, group_id: str, member_id: str) -> Refusal | None:
        with self._lock:
            loaded, group = self._group(group_id, member_id)
            if isinstance(loaded, Refusal):
                return loaded
            outcome = group.leave(member_id, self._clock.monotonic_ms())
            self._traces.observe(group)
        if outcome.refusal:
            return outcome.refusal
        self._carry_out(loaded, group, outcome)
        return None

    def commit(self, group_id: str, generation_id: int, member_id: str,
               offsets: list[tuple[TopicPartition, CommittedOffset]], *, admin: bool = False) -> Refusal | None:
        """Store offsets once the group's state allows it; `admin` is AlterGroupOffsets (no members allowed)."""
        with self._lock:
            loaded = self.locate(group_id)
            if isinstance(loaded, Refusal):
                return loaded
            group = loaded.groups.get(group_id)
            if group is not None:
                refusal = (group.alter_offsets_refusal() if admin
                           else group.commit_refusal(member_id, generation_id, self._clock.monotonic_ms()))
            elif admin or (generation_id == NO_GENERATION and not member_id):
                refusal = None
            else:
                refusal = Refusal(ErrorCode.UNKNOWN_MEMBER_ID, f"group {group_id!r} has no member {member_id!r}")
            if refusal:
                return refusal
        records = [(offset_key(group_id, tp), offset_value(committed)) for tp, committed in offsets]
        refusal, base_offset = self._log.append(loaded.tp, records)
        if refusal:
            return refusal
        with self._lock:
            for i, (tp, committed) in enumerate(offsets):
                loaded.offsets.put(group_id, tp, committed, log_offset=base_offset + i)
        if self._metrics is not None:
            self._metrics.group_offset_commits.inc(len(offsets))
        return None

    def committed(self, group_id: str, tps: list[TopicPartition]) -> dict[TopicPartition, CommittedOffset] | Refusal:
        with self._lock:
            loaded = self.locate(group_id)
            if isinstance(loaded, Refusal):
                return loaded
            held = loaded.offsets.of_group(group_id)
        return held if not tps else {tp: held[tp] for tp in tps if tp in held}

    def groups(self) -> list[tuple[str, Group | None]]:
        """Every group this broker coordinates: with its state, or None for one that only has offsets."""
        with self._lock:
            found: dict[str, Group | None] = {}
            for loaded in self._loaded.values():
                found.update({g: None for g in loaded.offsets.groups()})
                found.update(loaded.groups)
            return sorted(found.items())

    def describe(self, group_id: str) -> Group | None | Refusal:
        """The group (read it under `described`), None for one with offsets only, or why not."""
        with self._lock:
            loaded = self.locate(group_id)
            if isinstance(loaded, Refusal):
                return loaded
            group = loaded.groups.get(group_id)
            if group is None and not loaded.offsets.of_group(group_id):
                return Refusal(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")
            return group

    def metric_rows(self, high_watermark: Callable[[TopicPartition], int | None]) -> list[GroupRow]:
        """Each coordinated group's members, generation and lag (where `high_watermark` knows the partition)."""
        with self._lock:
            held = [(g, loaded.groups.get(g), loaded.offsets.of_group(g))
                    for loaded in self._loaded.values() for g in set(loaded.groups) | set(loaded.offsets.groups())]
            rows = [(g, len(group.members) if group else 0, group.generation_id if group else 0, offsets)
                    for g, group, offsets in held]
        out = []
        for group_id, members, generation_id, offsets in sorted(rows, key=lambda r: r[0]):
            lags = []
            for tp, committed in sorted(offsets.items()):
                end = high_watermark(tp)
                if end is not None:
                    lags.append((tp.topic, tp.partition, max(0, end - committed.offset)))
            out.append(GroupRow(group_id, members, generation_id, tuple(lags)))
        return out

    @property
    def described(self) -> threading.Lock:
        return self._lock

    def delete(self, group_id: str) -> Refusal | None:
        with self._lock:
            loaded = self.locate(group_id)
            if isinstance(loaded, Refusal):
                return loaded
            group = loaded.groups.get(group_id)
            if group is None and not loaded.offsets.of_group(group_id):
                return Refusal(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")
            refusal = group.alter_offsets_refusal() if group is not None else None
            if refusal:
                return refusal
            tombstones = [(offset_key(group_id, tp), None) for tp in loaded.offsets.of_group(group_id)]
        refusal, _ = self._log.append(loaded.tp, [(group_key(group_id), None)] + tombstones)
        if refusal:
            return refusal
        with self._lock:
            held = loaded.groups.pop(group_id, None)
            if held is not None and held.members:  # someone joined while the tombstones were written
                loaded.groups[group_id] = held
            elif held is not None:
                held.delete()
                self._traces.forget(group_id, "deleted")
            loaded.offsets.drop_group(group_id)
        return None

    # --- carrying out outcomes ---

    def _group(self, group_id: str, member_id: str) -> tuple[_Loaded | Refusal, Group | None]:
        loaded = self.locate(group_id)
        if isinstance(loaded, Refusal):
            return loaded, None
        group = loaded.groups.get(group_id)
        if group is None:
            return Refusal(ErrorCode.UNKNOWN_MEMBER_ID, f"group {group_id!r} has no member {member_id!r}"), None
        return loaded, group

    def _carry_out(self, loaded: _Loaded, group: Group, outcome: Outcome) -> None:
        self._answer(group.group_id, outcome)
        if outcome.persist is None:
            return
        snapshot = outcome.persist
        refusal, _ = self._log.append(loaded.tp, [(group_key(group.group_id), group_value(snapshot))])
        if refusal:
            log.warning("group %s: storing generation %d failed: %s", group.group_id, snapshot.generation_id,
                        refusal.reason)
        with self._lock:
            now_ms = self._clock.monotonic_ms()
            was_completing = group.state is GroupState.COMPLETING_REBALANCE
            follow = group.assignment_persisted(snapshot.generation_id, refusal, now_ms)
            self._traces.observe(group)
            if was_completing and group.state is GroupState.STABLE and self._metrics is not None:
                self._metrics.group_rebalances.inc()
                self._metrics.group_rebalance_s.observe((now_ms - group.rebalance_started_ms) / 1000)
        self._carry_out(loaded, group, follow)

    def _answer(self, group_id: str, outcome: Outcome) -> None:
        with self._lock:
            for answer in outcome.answers:
                kind = "join" if isinstance(answer, JoinAnswer) else "sync"
                parked = self._parked.pop((group_id, answer.member_id, kind), None)
                if parked is not None:
                    parked.answer = answer
                    parked.done.set()

    def _await(self, key, parked: _Parked, timeout_ms: int, kind):
        if parked.done.wait((timeout_ms + PARK_GRACE_MS) / 1000):
            return parked.answer
        with self._lock:
            if self._parked.get(key) is parked:
                del self._parked[key]
        if parked.answer is not None:
            return parked.answer
        return kind(key[1], ErrorCode.REBALANCE_IN_PROGRESS, "the rebalance did not complete in time; rejoin")

    # --- the ticker: leadership, loading, sessions ---

    def _run(self) -> None:
        while not self._stop.wait(TICK_MS / 1000):
            try:
                self._reconcile()
                self._tick()
            except Exception:  # noqa: BLE001 - logged; the next tick tries again
                log.exception("group coordinator tick failed")

    def _reconcile(self) -> None:
        count = self._partitions() or 0
        for partition in range(count):
            tp = TopicPartition(OFFSETS_TOPIC, partition)
            epoch = self._log.leader_epoch(tp)
            held = self._loaded.get(partition)
            if epoch is not None and (held is None or held.leader_epoch != epoch):
                self._unload(partition)
                self._load(tp, epoch)
            elif epoch is None and held is not None:
                self._unload(partition)

    def _load(self, tp: TopicPartition, leader_epoch: int) -> None:
        with self._lock:
            self._loading.add(tp.partition)
        loaded = _Loaded(tp, leader_epoch)
        snapshots = {}
        try:
            for log_offset, key, value in self._log.read_all(tp, leader_epoch):
                try:
                    record = decode(key, value)
                except RecordFormatError as error:
                    log.warning("%s: skipping an unreadable record: %s", tp, error)
                    continue
                if isinstance(record, GroupRecord):
                    snapshots[record.group_id] = record.snapshot
                else:
                    loaded.offsets.put(record.group_id, record.tp, record.committed, log_offset=log_offset)
        except NotReady as why:
            log.debug("%s: not loaded yet: %s", tp, why)
            with self._lock:
                self._loading.discard(tp.partition)
            return
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            for group_id, snapshot in snapshots.items():
                if snapshot is not None:
                    loaded.groups[group_id] = Group.restore(snapshot, self._policy, now_ms)
            self._loaded[tp.partition] = loaded
            self._loading.discard(tp.partition)
        log.info("%s: coordinating %d group(s) at leader epoch %d", tp, len(loaded.groups), leader_epoch)

    def _unload(self, partition: int) -> None:
        with self._lock:
            loaded = self._loaded.pop(partition, None)
            outcomes = [] if loaded is None else [(g.group_id, g.unload()) for g in loaded.groups.values()]
            for group_id, _ in outcomes:
                self._traces.forget(group_id, "coordinator moved")
        for group_id, outcome in outcomes:
            self._answer(group_id, outcome)
        if loaded is not None:
            log.info("%s: no longer coordinating its groups", loaded.tp)

    def _tick(self) -> None:
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            work = [(loaded, group, group.tick(now_ms))
                    for loaded in self._loaded.values() for group in list(loaded.groups.values())]
            for _, group, _ in work:
                self._traces.observe(group)
        for loaded, group, outcome in work:
            if outcome.answers or outcome.persist:
                self._carry_out(loaded, group, outcome)
