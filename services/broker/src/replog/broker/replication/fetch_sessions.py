"""Replica fetch sessions on the leader: a follower's long poll costs what changed, not what it follows.

Theory of operation (docs/architecture.md, "Replication"; the idea of Kafka's KIP-227
incremental fetch sessions, kept to replication):

A follower's fetcher carries every partition it follows on this leader,
thousands after a failover; without sessions each round trip re-sends and
re-reads all of them (docs/perf/fetch-sessions.md). With a session the leader
remembers, per follower broker, each partition's last fetch position and keeps one `Waiter`
(long_poll.py) parked on all of them for the session's life, so appends, HW
moves and role changes accumulate between requests. A request then reads only:
- the partitions it lists (new to the session, or whose position changed:
  the follower appended or truncated),
- the partitions that signalled since the last request (the waiter),
- the partitions still pending (had records the byte budget or the
  reassignment throttle, replication_throttle.py, left unsent),
and long-polls on the waiter if none has anything to send. A partition left
unread has nothing new: its follower sits at the position the leader knows,
and one that is at the leader's LEO is in sync however long it idles, and
caught up until the append that ends the idle (follower_progress.py). A
leader that can act on an idle follower again (an ISR answer cleared its
pending proposal) wakes the partition's waiters; and every SWEEP_INTERVAL_MS
a request reads again the partitions whose follower is outside the ISR, since
whether it may rejoin can change with time alone.

`session_epoch` 0 opens a session. It replaces the previous one of the same
follower fetcher (`fetcher_id`: a follower may split the partitions it follows
here over several fetchers, fetcher_manager.py), and closes those of the
follower's fetcher ids at or past its `fetcher_count`, left by a run with more
fetchers, which would otherwise stay parked for good; a closed session's waiter
is unparked. Later requests carry the next epoch, and may name partitions new
to the session (a follower joins the partitions it starts
following, after a leader change, without opening a new session). A request
for an unknown session or out of sequence is refused as a whole
(FETCH_SESSION_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH) and the follower opens
a new one; so does a follower whose request failed in transit, since the
leader may have consumed wake-ups for an answer the follower never saw. The
one exception is a *resend*: a follower that cancelled its own long poll (to
name a joining partition at once) flags its next request, one epoch on. The
leader accepts it whether or not the cancelled request reached it (so the epoch
may skip one), and reads again every partition of its last answer, which the
follower may never have seen. A cancelled request that reaches the leader after
its resend is out of sequence, and refused before it touches anything.

One request at a time per session (its lock). A hosted partition replaced
under the same name (deleted, created again) is re-parked on first use.
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable, Iterable, NamedTuple

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import FollowerFetchAnswer
from replog.broker.replicas.long_poll import Waiter
from replog.broker.replication.replication_throttle import ReplicationThrottle
from replog.broker.runtime.turn import Turn
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

# Partitions whose follower is outside the ISR are read again at least this often, even if
# nothing signalled: whether it may rejoin can change with time alone (an INELIGIBLE_REPLICA
# back-off ending). A follower in the ISR needs no such look: idle at the leader's LEO it is
# in sync, and behind it the appends wake it.
SWEEP_INTERVAL_MS = 2_000



class FollowerPosition(NamedTuple):
    """One partition as a follower's fetch names it (the servicer converts it from the request)."""

    topic: str
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    partition_max_bytes: int
    known_high_watermark: int  # the HW the follower says it knows
    log_start_offset: int = 0  # the follower's log start


ReadOne = Callable[[TopicPartition, FollowerPosition, HostedPartition | None, int], FollowerFetchAnswer]


class FetchSession:
    def __init__(self, replica_id: int, session_id: int, lookup: Callable[[TopicPartition], HostedPartition | None],
                 *, turn: Turn, throttle: ReplicationThrottle | None = None):
        self.replica_id = replica_id
        self._turn = turn
        self._throttle = throttle
        self.session_id = session_id
        self.epoch = 0
        self.lock = threading.Lock()
        self.closed = False
        self._lookup = lookup
        self.waiter = Waiter(replica_id)  # parked on every partition of the session
        self._positions: dict[TopicPartition, FollowerPosition] = {}
        # The HW each partition's follower knows: as its fetch named it, then as answers told it.
        self._known_high_watermarks: dict[TopicPartition, int] = {}
        self._parked: dict[TopicPartition, HostedPartition] = {}
        self._by_source: dict[int, TopicPartition] = {}
        self._pending: set[TopicPartition] = set()
        self._outside_isr: set[TopicPartition] = set()
        self._last_answered: set[TopicPartition] = set()  # read by the last request, for a resend
        # The HW each partition's follower knew before the last answer told it a newer one: a resend
        # (the follower may never have seen that answer) puts them back, so the HW is sent again.
        self._known_before_last_answer: dict[TopicPartition, int] = {}
        self._next_sweep_ms = 0

    # --- lifecycle (close from any thread; the rest under `lock`) ---------------------------

    def close(self) -> None:
        """Replaced by a newer session: end any poll in progress; unpark now or when it ends."""
        self.closed = True
        self.waiter.notify(self)
        if self.lock.acquire(blocking=False):
            try:
                self.unpark_all()
            finally:
                self.lock.release()

    def interrupt(self) -> None:
        """The RPC ended (cancelled, deadline): wake the poll so it notices."""
        self.waiter.notify(self)

    def unpark_all(self) -> None:
        for hosted in self._parked.values():
            hosted.remove_waiter(self.waiter)
        self._parked.clear()
        self._by_source.clear()

    # --- one request ------------------------------------------------------------------------

    def admits(self, epoch: int, *, resend: bool) -> bool:
        """Whether a request at `epoch` comes next. A resend may skip the epoch of the request its
        follower cancelled, whether or not that one reached us; that one, arriving late, does not."""
        if epoch == 0:
            return True  # a session just opened for this request
        return epoch == self.epoch + 1 or (resend and epoch == self.epoch + 2)

    def listed(self, partitions: Iterable[FollowerPosition]) -> set[TopicPartition]:
        """Record the positions the request names; returns their partitions."""
        named = set()
        for position in partitions:
            tp = TopicPartition(position.topic, position.partition)
            self._positions[tp] = position
            self._known_high_watermarks[tp] = position.known_high_watermark
            named.add(tp)
        return named

    def poll(
        self, to_read: set[TopicPartition], read_one: ReadOne, *, bytes_max: int, min_bytes: int, max_wait_ms: int,
        clock: Clock, stopping: Callable[[], bool], resend: bool = False,
    ) -> dict[TopicPartition, FollowerFetchAnswer]:
        """Answers for every partition read (the caller leaves out those with nothing new).
        `resend`: the follower may not have seen the last answer; its partitions are read again."""
        now_ms = clock.monotonic_ms()
        if resend:
            to_read = to_read | self._last_answered
            known_high_watermarks = self._known_high_watermarks
            for tp, known in self._known_before_last_answer.items():
                if known_high_watermarks.get(tp, known) > known:
                    known_high_watermarks[tp] = known
        self._known_before_last_answer = {}
        if now_ms >= self._next_sweep_ms:
            self._next_sweep_ms = now_ms + SWEEP_INTERVAL_MS
            to_read = to_read | self._outside_isr
        to_read = to_read | self._pending | self._woken()
        deadline_ms = now_ms + max(max_wait_ms, 0)
        answers: dict[TopicPartition, FollowerFetchAnswer] = {}
        held_back: set[TopicPartition] = set()  # records for a replica being added, over the throttle
        sent = 0
        while True:
            urgent = False
            with self._turn:  # turn.py: a read is a system call; the wait below is outside the turn
                for tp in to_read:
                    hosted = self._park(tp)
                    budget = max(bytes_max - sent, 1)
                    throttled = (self._throttle is not None and hosted is not None
                                 and self.replica_id in hosted.replica.state.adding)
                    if throttled:
                        allowance = self._throttle.allowance()
                        if allowance == 0:
                            held_back.add(tp)
                            continue
                        if allowance is not None:
                            budget = min(budget, allowance)
                    previous = answers.get(tp)
                    if previous is not None:
                        sent -= len(previous.records)
                    answer = answers[tp] = read_one(tp, self._positions[tp], hosted, budget)
                    held_back.discard(tp)
                    if throttled:
                        self._throttle.record(len(answer.records))
                    sent += len(answer.records)
                    urgent = urgent or answer.error_code is not ErrorCode.NONE or answer.diverging is not None
            remaining_ms = deadline_ms - clock.monotonic_ms()
            if urgent or sent >= min_bytes or remaining_ms <= 0 or stopping() or self.closed:
                break
            # Woken, or at the deadline: read what signalled, including what was only noted (a HW
            # that moved, Waiter.note), so an answer on the deadline carries it.
            self.waiter.wait(remaining_ms / 1000)
            to_read = self._woken()
        for tp, answer in answers.items():
            unsent = (not answer.records and answer.error_code is ErrorCode.NONE and answer.diverging is None
                      and self._positions[tp].fetch_offset < answer.log_end_offset)
            if unsent:
                self._pending.add(tp)
            else:
                self._pending.discard(tp)
            if answer.follower_in_isr:
                self._outside_isr.discard(tp)
            else:
                self._outside_isr.add(tp)
        self._pending |= held_back - answers.keys()
        self._last_answered = set(answers)
        if self.closed:
            self.unpark_all()  # replaced while we polled; close() could not take the lock
        return answers

    def news(
        self, answers: dict[TopicPartition, FollowerFetchAnswer]
    ) -> list[tuple[TopicPartition, FollowerFetchAnswer]]:
        """The answers to send: those telling the follower something (`_is_news`, given the HW the
        session knows it has). The HW each one carries is then taken as known, so a follower names
        a partition again only when its own position moves, not to say it saw a new HW
        (docs/perf/hw-news.md)."""
        sent = []
        known_high_watermarks = self._known_high_watermarks
        for tp, answer in answers.items():
            known = known_high_watermarks[tp]
            if _is_news(answer, known, self._positions[tp].log_start_offset):
                sent.append((tp, answer))
                if answer.error_code is ErrorCode.NONE and answer.high_watermark > known:
                    self._known_before_last_answer[tp] = known
                    known_high_watermarks[tp] = answer.high_watermark
        return sent

    def _woken(self) -> set[TopicPartition]:
        by_source = self._by_source
        return {by_source[source] for source in self.waiter.take() if source in by_source}

    def _park(self, tp: TopicPartition) -> HostedPartition | None:
        """The hosted partition now, with the session's waiter parked on it (before it is read)."""
        hosted = self._lookup(tp)
        parked = self._parked.get(tp)
        if hosted is not parked:
            if parked is not None:
                parked.remove_waiter(self.waiter)
                del self._parked[tp]
                self._by_source.pop(id(parked), None)
            if hosted is not None:
                hosted.add_waiter(self.waiter)
                self._parked[tp] = hosted
                self._by_source[id(hosted)] = tp
        return hosted


def _is_news(answer: FollowerFetchAnswer, known_high_watermark: int, follower_log_start_offset: int) -> bool:
    """Whether the follower learns anything from this partition's answer (else it is left out): records,
    an error, a divergence, a newer HW, or a newer log start (which the follower then names)."""
    return (bool(answer.records) or answer.error_code is not ErrorCode.NONE or answer.diverging is not None
            or answer.high_watermark > known_high_watermark or answer.log_start_offset > follower_log_start_offset)


class FetchSessions:
    """The open session of each follower fetcher, by (follower broker id, fetcher id)."""

    def __init__(self, lookup: Callable[[TopicPartition], HostedPartition | None], *, turn: Turn,
                 throttle: ReplicationThrottle | None = None) -> None:
        self._lookup = lookup
        self._throttle = throttle
        self._turn = turn
        self._lock = threading.Lock()
        self._by_replica: dict[tuple[int, int], FetchSession] = {}
        self._ids = itertools.count(1)

    def open(self, replica_id: int, fetcher_id: int = 0, fetcher_count: int = 1) -> FetchSession:
        """A new session for this follower fetcher, replacing its previous one; sessions of the
        follower's fetcher ids at or past `fetcher_count` (a run with more fetchers) are closed too."""
        with self._lock:
            session = FetchSession(replica_id, next(self._ids), self._lookup, turn=self._turn, throttle=self._throttle)
            replaced = [self._by_replica.pop(key) for key in list(self._by_replica)
                        if key == (replica_id, fetcher_id) or (key[0] == replica_id and key[1] >= fetcher_count)]
            self._by_replica[(replica_id, fetcher_id)] = session
        for previous in replaced:
            previous.close()
        return session

    def find(self, replica_id: int, session_id: int, fetcher_id: int = 0) -> FetchSession | Refusal:
        with self._lock:
            session = self._by_replica.get((replica_id, fetcher_id))
        if session is None or session.session_id != session_id:
            return Refusal(ErrorCode.FETCH_SESSION_NOT_FOUND,
                           f"no fetch session {session_id} for replica {replica_id} fetcher {fetcher_id}; "
                           "open a new one")
        return session

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_replica)
