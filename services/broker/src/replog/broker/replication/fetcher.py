"""One replica fetcher: a thread pulling every partition this broker follows on one leader.

Theory of operation (docs/architecture.md, "Replication", "Truncation by leader epoch"; Kafka
`ReplicaFetcherThread` / `AbstractFetcherThread`):

The fetcher holds a target per partition: the leader epoch it follows in (from
the LeaderAndIsr that started it) and a back-off deadline. It fetches in a
session with the leader (fetch_sessions.py): the first request names every
ready partition with its fetch position (follower_side.py); later ones name
only the partitions whose position may have changed (they had an answer, or
their back-off ended), and the leader answers only partitions with something
new, so an idle partition costs nothing per round. Each request is a long
poll (the leader answers when it has records or after `max_wait_ms`), sent as
one message on a ReplicaFetchStream kept open to the leader (fetch_stream.py,
fetch_messages.py); a failed or cancelled exchange ends the stream, and the
next request opens another (on a new channel if the leader did not answer in
time: the connection is suspect). Removing partitions, a failed or cancelled
request, or the leader refusing the session starts a new session. Each
partition's answer is acted on against the position the session holds for it
(follower_answers.py). A transport failure backs off the whole fetcher,
exponentially up to a second, and until the leader answers again each retry
opens an empty session, so a dead leader costs a retry of nothing.

Adding a partition cancels a long poll in flight, so a new follower (say,
after a leader change) starts fetching at once instead of after the poll.
With a session open, the partition joins it: the next request is a resend
(fetch_sessions.py), one epoch on, naming the new partitions and those of the
cancelled request, not all of them (docs/perf/fetch-session-join.md). Without
a session (none yet, or one being opened) adding starts a new one.
An answer for a target that changed while the request was out is ignored;
so is one the replica no longer wants (checked under its lock).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

import grpc
from opentelemetry import context as otel_context

from replog.broker.core.errors import ErrorCode
from replog.broker.replicas.follower_side import FetchPosition, fetch_position
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replication.fetch_messages import FetchRequest, fetch_answer, fetch_request
from replog.broker.replication.fetch_stream import FetchStream, StreamEnded, describe_failure
from replog.broker.replication.follower_answers import ERROR_BACKOFF_MS, Follow, LeaderAnswer, handle_answer
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.thread_guard import guarded_round
from replog.broker.runtime.turn import Turn
from replog.common import hopmarks
from replog.common.channels import ChannelCache
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition
from replog.common.hopmarks import Hop

log = logging.getLogger(__name__)

TRANSPORT_BACKOFF_MS_MIN = 50
TRANSPORT_BACKOFF_MS_MAX = 1000
RPC_SLACK_S = 10.0


@dataclass(frozen=True)
class FetchSettings:
    broker_id: int
    max_wait_ms: int
    bytes_max: int
    partition_bytes_max: int


@dataclass
class _Target:
    follow: Follow  # the leader epoch it follows in, and the trace of the LeaderAndIsr that started it
    backoff_until_ms: int = 0

    @property
    def leader_epoch(self) -> int:
        return self.follow.leader_epoch


class ReplicaFetcher:
    def __init__(
        self,
        *,
        leader_id: int,
        fetcher_id: int = 0,
        fetcher_count: int = 1,
        settings: FetchSettings,
        lookup: Callable[[TopicPartition], HostedPartition | None],
        address_of: Callable[[int], str | None],
        broker_epoch_of: Callable[[], int],
        channels: ChannelCache,
        clock: Clock,
        metrics: BrokerMetrics,
        turn: Turn,
        fsync_each_append: Callable[[str], bool] = lambda topic: False,
    ) -> None:
        self._turn = turn
        self._fsync_each_append = fsync_each_append  # the topic's durable mode (control/topic_configs.py)
        self.leader_id = leader_id
        self.fetcher_id = fetcher_id
        self._fetcher_count = fetcher_count
        self._settings = settings
        self._lookup = lookup
        self._address_of = address_of
        self._broker_epoch_of = broker_epoch_of
        self._channels = channels
        self._clock = clock
        self._metrics = metrics
        self._cond = threading.Condition()
        self._targets: dict[TopicPartition, _Target] = {}
        self._call = None  # the stream while an exchange is in flight (add() and stop() cancel it)
        self._stream: FetchStream | None = None  # open to the leader between rounds, for the fetcher's life
        self._stream_address: str | None = None
        self._restart_requested = False
        # A partition joined the open session: a request built before it is not sent, and one in
        # flight was cancelled on purpose; either way its partitions are named again (a resend).
        self._joining = False
        self._resend = False  # the next request follows one add() cancelled (see fetch_sessions.py)
        self._stopped = False
        self._transport_backoff_ms = 0
        # The last request failed in transport (say the leader died): the next one opens an empty
        # session without waiting, to learn cheaply whether the leader answers, and only then are
        # the partitions named (see `_wait_for_work`).
        self._unreachable = False
        # The fetch session with the leader (fetch_sessions.py): id 0 means open a new one next;
        # the generation counts resets, so an answer that raced with one is not taken for the new session.
        self._session_id = 0
        self._session_generation = 0
        self._session_epoch = 0
        # Positions the session holds (as last sent), to read the leader's answers against.
        self._session_positions: dict[TopicPartition, tuple[_Target, FetchPosition]] = {}
        # Partitions to name in the next incremental request: their position may have changed.
        self._dirty: set[TopicPartition] = set()
        self._thread = threading.Thread(target=self._run, name=f"replica-fetcher-{leader_id}-{fetcher_id}", daemon=True)

    # --- control (any thread) ---------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def add(self, partitions: Iterable[tuple[TopicPartition, int]], trace_context: otel_context.Context | None) -> None:
        """Fetch these (partition, leader epoch) pairs from now on: one cancel and one wake-up for all
        of them (added one by one, the thread woke per partition to build requests it then dropped)."""
        with self._cond:
            for topic_partition, leader_epoch in partitions:
                self._targets[topic_partition] = _Target(
                    Follow(topic_partition, self.leader_id, leader_epoch, trace_context))
                self._dirty.add(topic_partition)
            if self._session_id == 0:
                self._restart_requested = True
                self._reset_session_locked()
            else:
                self._joining = True
            if self._call is not None:
                self._call.cancel()
            self._cond.notify_all()

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching these. One session reset for all: each reset makes the next request name
        every partition left (docs/perf/fetch-session-join.md)."""
        with self._cond:
            removed = [tp for tp in partitions if self._targets.pop(tp, None) is not None]
            if removed:
                self._reset_session_locked()  # the next request opens a session without them

    def position_changed(self, topic_partition: TopicPartition) -> None:
        """Its log was cut outside the fetcher (the scrubber): the leader holds the old position, so name it next."""
        with self._cond:
            if topic_partition in self._targets:
                self._dirty.add(topic_partition)
                self._cond.notify_all()

    def partition_count(self) -> int:
        with self._cond:
            return len(self._targets)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            if self._call is not None:
                self._call.cancel()
            if self._stream is not None:
                self._stream.cancel()
                self._stream = None
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)

    # --- the fetch loop ---------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopped:
            guarded_round(self._round)

    def _round(self) -> None:
        work = self._wait_for_work()
        if work is None:
            return
        ready, generation, session_epoch = work
        positions = self._positions(ready)
        probe = not ready and session_epoch == 0
        if positions or session_epoch > 0 or probe:
            self._fetch_once(positions, generation, session_epoch, probe=probe)

    def _wait_for_work(self) -> tuple[dict[TopicPartition, _Target], int, int] | None:
        """What the next request names, with the session generation and epoch, once any partition may fetch.

        Opening a session names every partition not backing off; an incremental request only
        the dirty ones whose back-off is over (possibly none: an idle long poll). After a
        transport failure the session is opened empty (none named, no wait): a dead leader
        costs a retry of nothing instead of a request naming thousands of partitions, and a
        live one is told them all in the next request."""
        with self._cond:
            while not self._stopped:
                now_ms = self._clock.monotonic_ms()
                if self._session_id == 0:
                    ready = {tp: t for tp, t in self._targets.items() if t.backoff_until_ms <= now_ms}
                    if ready:
                        self._restart_requested = self._joining = False
                        self._session_positions = {}
                        if self._unreachable:
                            self._dirty = set(self._targets)
                            return {}, self._session_generation, 0
                        # Those backing off join the session by name once their back-off is over.
                        self._dirty = {tp for tp in self._targets if tp not in ready}
                        return ready, self._session_generation, 0
                elif any(t.backoff_until_ms <= now_ms for t in self._targets.values()):
                    ready = {}
                    for tp in self._dirty:
                        target = self._targets.get(tp)
                        if target is not None and target.backoff_until_ms <= now_ms:
                            ready[tp] = target
                    self._dirty.difference_update(ready)
                    self._restart_requested = self._joining = False
                    return ready, self._session_generation, self._session_epoch + 1
                wake_ms = min((t.backoff_until_ms for t in self._targets.values()), default=None)
                self._cond.wait(None if wake_ms is None else max(wake_ms - now_ms, 1) / 1000)
            return None

    def _positions(self, ready: dict[TopicPartition, _Target]) -> dict[TopicPartition, tuple[_Target, FetchPosition]]:
        positions = {}
        for topic_partition, target in ready.items():
            hosted = self._lookup(topic_partition)
            position = None if hosted is None else fetch_position(hosted, leader_epoch=target.leader_epoch)
            if position is None:
                self._drop_if_unchanged(topic_partition, target)
            else:
                positions[topic_partition] = (target, position)
        return positions

    def _fetch_once(self, positions: dict[TopicPartition, tuple[_Target, FetchPosition]], generation: int,
                    session_epoch: int, *, probe: bool = False) -> None:
        """One ReplicaFetch; a `probe` (after a transport failure) names nothing and does not wait."""
        address = self._address_of(self.leader_id)
        if address is None:
            log.warning("no address known for leader broker %d; backing off", self.leader_id)
            self._back_off_all(ERROR_BACKOFF_MS)
            return
        settings = self._settings
        request = fetch_request(FetchRequest(
            settings.broker_id, 0 if probe else settings.max_wait_ms, settings.bytes_max, settings.partition_bytes_max,
            self._broker_epoch_of(), self._session_id if session_epoch > 0 else 0, session_epoch,
            self._resend and session_epoch > 0, self.fetcher_id, self._fetcher_count,
            ((tp, target.leader_epoch, position) for tp, (target, position) in positions.items()),
        ))
        with self._cond:
            if self._stopped or self._restart_requested:
                return
            if self._joining and session_epoch > 0:
                self._dirty.update(positions)  # built before a partition joined: name it too
                return
            stream = self._stream
            if stream is None or self._stream_address != address:
                if stream is not None:
                    stream.cancel()
                stream = self._stream = FetchStream(self._channels.get(address))
                self._stream_address = address
            self._call = stream
        hopmarks.mark(Hop.FOLLOWER_SENDS_FETCH, settings.broker_id)
        try:
            response = fetch_answer(stream.exchange(request, timeout_s=settings.max_wait_ms / 1000 + RPC_SLACK_S))
            hopmarks.mark(Hop.FOLLOWER_HAS_ANSWER, settings.broker_id)
        except (grpc.RpcError, StreamEnded) as exc:
            stream.cancel()  # finished (this also ends its request feeder); the next request opens another
            if stream.timed_out:
                # Nothing came back in time: the connection itself is suspect (one into a network
                # cut swallows whatever is sent on it), so the next stream goes on a new channel,
                # after the transport back-off below. The channel's keepalive pings find a dead
                # connection sooner (channels.py); this is the backstop for what they miss.
                self._channels.drop(address, stream.channel)
            with self._cond:
                if self._stream is stream:
                    self._stream = None
                resend = (self._joining and session_epoch > 0 and not self._restart_requested
                          and self._session_generation == generation)
                if resend:  # cancelled by add(): the session goes on, one epoch further
                    self._dirty.update(positions)
                    self._session_epoch = session_epoch
                    self._resend = True
            if not resend:
                self._on_transport_failure(address, describe_failure(stream, exc))
            return
        finally:
            with self._cond:
                self._call = None
        self._transport_backoff_ms = 0
        self._unreachable = False
        if response.error_code in (ErrorCode.FETCH_SESSION_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
            log.info("leader %d: %s; opening a new fetch session", self.leader_id, response.error_message)
            self._reset_session()
            return
        if response.error_code != ErrorCode.NONE:
            log.warning("leader %d refused ReplicaFetch: %s %s", self.leader_id,
                        ErrorCode(response.error_code).name, response.error_message)
            self._back_off_all(ERROR_BACKOFF_MS)
            return
        with self._cond:
            if self._restart_requested or self._session_generation != generation:
                return  # re-targeted while the request was out; a new session starts next round
            self._session_id, self._session_epoch = response.session_id, session_epoch
            self._resend = False
            self._session_positions.update(positions)
            session_positions = self._session_positions
        moved: list[TopicPartition] = []  # to name in the next request: it moved, or backs off
        with self._turn:  # turn.py: an append is a system call per partition
            for topic_partition, answer in response.partitions:
                entry = session_positions.get(topic_partition)
                if entry is not None and self._handle_partition(topic_partition, *entry, answer):
                    moved.append(topic_partition)
        if moved:
            with self._cond:  # once per answer, not per partition: only this thread reads them, next round
                self._dirty.update(moved)
        hopmarks.mark(Hop.FOLLOWER_APPENDED, settings.broker_id)

    def _reset_session(self) -> None:
        with self._cond:
            self._reset_session_locked()

    def _reset_session_locked(self) -> None:
        self._session_id = 0
        self._resend = False
        self._session_generation += 1

    def _on_transport_failure(self, address: str, why: str) -> None:
        self._reset_session()  # the leader may have used up wake-ups for the answer we lost
        with self._cond:
            if self._stopped or self._restart_requested:
                return  # cancelled on purpose
        self._unreachable = True
        self._transport_backoff_ms = min(
            max(self._transport_backoff_ms * 2, TRANSPORT_BACKOFF_MS_MIN), TRANSPORT_BACKOFF_MS_MAX
        )
        log.info("ReplicaFetch to leader %d at %s failed (%s); retrying in %d ms", self.leader_id, address, why,
                 self._transport_backoff_ms)
        self._back_off_all(self._transport_backoff_ms)

    # --- one partition's answer -----------------------------------------------------------

    def _handle_partition(
        self, topic_partition: TopicPartition, target: _Target, position: FetchPosition,
        answer: LeaderAnswer,
    ) -> bool:
        """Act on one partition's answer (follower_answers.py); True if the next request must name it
        again. An answer with only a newer HW leaves the position as the leader knows it, and the leader
        takes the HW it sent as known (fetch_sessions.py)."""
        with self._cond:
            if self._targets.get(topic_partition) is not target:
                return True  # re-targeted or removed while the request was out
        hosted = self._lookup(topic_partition)
        if hosted is None:
            return True
        handled = handle_answer(hosted, target.follow, position, answer, self._metrics,
                                fsync=self._fsync_each_append(topic_partition.topic))
        if handled.back_off_ms:
            self._back_off(topic_partition, target, handled.back_off_ms)
        return handled.name_again

    # --- back-off -------------------------------------------------------------------------

    def _back_off(self, topic_partition: TopicPartition, target: _Target, delay_ms: int) -> None:
        with self._cond:
            if self._targets.get(topic_partition) is target:
                target.backoff_until_ms = self._clock.monotonic_ms() + delay_ms

    def _back_off_all(self, delay_ms: int) -> None:
        with self._cond:
            self._reset_session_locked()
            until_ms = self._clock.monotonic_ms() + delay_ms
            for target in self._targets.values():
                target.backoff_until_ms = max(target.backoff_until_ms, until_ms)

    def _drop_if_unchanged(self, topic_partition: TopicPartition, target: _Target) -> None:
        with self._cond:
            if self._targets.get(topic_partition) is target:
                del self._targets[topic_partition]
