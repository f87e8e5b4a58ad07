"""Leader-side replica fetch sessions: a round reads what changed, not every partition followed."""

from __future__ import annotations

import threading
import time

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.replicas.leader_side import FollowerFetchAnswer
from replog.broker.replication.fetch_sessions import FetchSessions
from replog.broker.runtime.turn import Turn
from replog.common.clock import SystemClock
from replog.common.core.partitions import TopicPartition
from replog.v1 import replication_pb2
from tests.unit.broker.thread_helpers import wait_for


class FakePartition:
    """Stands in for a HostedPartition: a log end offset, waiters, a read counter."""

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.log_end_offset = 10
        self.waiters: set = set()
        self.reads = 0
        self.high_watermark = 10

    def add_waiter(self, waiter):
        self.waiters.add(waiter)

    def remove_waiter(self, waiter):
        self.waiters.discard(waiter)

    def append(self, count: int) -> None:
        self.log_end_offset += count
        for waiter in list(self.waiters):
            waiter.notify(self)


PARTITIONS = {TopicPartition("t", p): FakePartition(TopicPartition("t", p)) for p in range(100)}


def fresh_partitions():
    for tp in PARTITIONS:
        PARTITIONS[tp] = FakePartition(tp)


def read_one(tp, position, hosted, bytes_left):
    hosted.reads += 1
    records = b"x" * (hosted.log_end_offset - position.fetch_offset)  # one batch: all of it, or none
    return FollowerFetchAnswer(ErrorCode.NONE, "", hosted.high_watermark, 0, hosted.log_end_offset, 1,
                               records=records if len(records) <= bytes_left else b"")


def position(tp, offset=10, known_high_watermark=10):
    return replication_pb2.ReplicaFetchPartition(topic=tp.topic, partition=tp.partition, current_leader_epoch=1,
                                                 fetch_offset=offset, last_fetched_epoch=1,
                                                 known_high_watermark=known_high_watermark)


def poll(session, listed, *, max_wait_ms=50, bytes_max=1 << 20, resend=False):
    with session.lock:
        return session.poll(session.listed(listed), read_one, bytes_max=bytes_max, min_bytes=1,
                            max_wait_ms=max_wait_ms, clock=SystemClock(), stopping=lambda: False, resend=resend)


def test_an_incremental_round_reads_only_what_it_names_or_what_woke():
    fresh_partitions()
    sessions = FetchSessions(PARTITIONS.get, turn=Turn())
    session = sessions.open(replica_id=2)
    assert poll(session, [position(tp) for tp in PARTITIONS]) and all(p.reads == 1 for p in PARTITIONS.values())
    busy, moved = PARTITIONS[TopicPartition("t", 7)], TopicPartition("t", 8)
    busy.append(3)  # between requests: the session's waiter remembers it
    answers = poll(session, [position(moved, offset=10)])
    assert set(answers) == {busy.tp, moved} and answers[busy.tp].records == b"xxx"
    assert sum(p.reads for p in PARTITIONS.values()) == 100 + 2


def test_a_resend_reads_again_what_the_lost_answer_carried():
    # The follower cancelled its long poll (a partition joined) and may never have seen the answer:
    # without a second look those records would wait for the partition's next append.
    busy, joining = TopicPartition("t", 3), TopicPartition("t", 99)
    for resend in (False, True):
        fresh_partitions()
        session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
        poll(session, [position(tp) for tp in PARTITIONS if tp != joining])
        PARTITIONS[busy].append(2)
        assert list(poll(session, [])) == [busy]  # this answer is lost on the way
        answers = poll(session, [position(joining)], resend=resend)
        assert set(answers) == ({busy, joining} if resend else {joining})
    assert answers[busy].records == b"xx"


def sent(session, answers):
    with session.lock:
        return [tp for tp, _ in session.news(answers)]


def test_a_high_watermark_once_sent_is_not_sent_again_unless_the_answer_may_be_lost():
    # After a failover the follower used to name every partition again only to say it had seen the
    # new HW: a third pass over thousands of partitions at the leader, just as the acks went out.
    fresh_partitions()
    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    moved = PARTITIONS[TopicPartition("t", 5)]
    assert sent(session, poll(session, [position(tp) for tp in PARTITIONS])) == []  # nothing new to say
    moved.high_watermark = 12
    moved.append(0)  # the HW moved: the waiter wakes
    assert sent(session, poll(session, [])) == [moved.tp]
    moved.append(0)  # woken again with nothing new (say, an ISR change)
    assert sent(session, poll(session, [])) == []
    moved.high_watermark = 13
    moved.append(0)
    assert sent(session, poll(session, [])) == [moved.tp]  # this answer is lost on the way
    assert sent(session, poll(session, [], resend=True)) == [moved.tp]  # so a resend carries HW 13 again


def test_a_resend_may_skip_the_cancelled_epoch_which_is_refused_if_it_arrives_late():
    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    session.epoch = 4
    assert session.admits(5, resend=False) and not session.admits(6, resend=False)
    assert session.admits(6, resend=True)  # epoch 5 was cancelled before it reached the leader
    session.epoch = 6
    assert not session.admits(5, resend=False)  # epoch 5, late: out of sequence
    assert not session.admits(5, resend=True) and not session.admits(6, resend=True)


def test_an_idle_incremental_round_waits_for_a_wake_up():
    fresh_partitions()
    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    poll(session, [position(tp) for tp in PARTITIONS])
    target = PARTITIONS[TopicPartition("t", 42)]
    threading.Timer(0.05, lambda: target.append(1)).start()
    started = time.monotonic()
    answers = poll(session, [], max_wait_ms=5000)
    assert list(answers) == [target.tp] and time.monotonic() - started < 4  # on the append, not at 5 s


def test_a_high_watermark_move_does_not_end_the_wait_but_its_answer_carries_it():
    # The leader tells a session of a HW move without waking it (Waiter.note): records are what it
    # waits for. It still answers on its deadline with the new HW, which the follower must learn.
    fresh_partitions()
    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    tp = TopicPartition("t", 3)
    poll(session, [position(p) for p in PARTITIONS])
    partition = PARTITIONS[tp]

    def move_high_watermark():
        wait_for(lambda: partition.waiters, "the session to wait on the partition")
        partition.high_watermark = 12
        for waiter in list(partition.waiters):
            waiter.note(partition)

    mover = threading.Thread(target=move_high_watermark)
    mover.start()
    started = time.monotonic()
    answers = poll(session, [], max_wait_ms=300)
    mover.join()
    assert time.monotonic() - started >= 0.29  # it waited its whole max wait
    assert answers[tp].high_watermark == 12 and answers[tp].records == b""
    assert [t for t, _ in session.news(answers)] == [tp]  # sent: the follower learns the HW


def test_records_the_byte_budget_left_unsent_are_read_again_next_round():
    fresh_partitions()
    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    first, second = PARTITIONS[TopicPartition("t", 0)], PARTITIONS[TopicPartition("t", 1)]
    first.log_end_offset = second.log_end_offset = 20
    answers = poll(session, [position(first.tp), position(second.tp)], bytes_max=10)
    sent = [tp for tp, a in answers.items() if a.records]
    unsent = [tp for tp, a in answers.items() if not a.records]
    assert len(sent) == 1 and len(unsent) == 1
    again = poll(session, [position(sent[0], offset=20)])
    assert again[unsent[0]].records == b"x" * 10


def test_a_new_session_replaces_the_old_one_and_ends_its_poll():
    fresh_partitions()
    sessions = FetchSessions(PARTITIONS.get, turn=Turn())
    old = sessions.open(replica_id=2)
    poll(old, [position(tp) for tp in PARTITIONS])
    done = threading.Event()
    threading.Thread(target=lambda: (poll(old, [], max_wait_ms=10_000), done.set())).start()
    wait_for(lambda: all(p.waiters for p in PARTITIONS.values()), "the old session's poll to wait")
    new = sessions.open(replica_id=2)
    assert done.wait(2) and old.closed
    assert all(len(p.waiters) == 0 for p in PARTITIONS.values())  # the old waiter is gone everywhere
    refused = sessions.find(2, old.session_id)
    assert isinstance(refused, Refusal) and refused.code is ErrorCode.FETCH_SESSION_NOT_FOUND
    assert sessions.find(2, new.session_id) is new


def test_each_fetcher_of_a_follower_keeps_its_own_session():
    # A follower splits the partitions it follows here over its fetchers; one of them opening a
    # session must not end another's.
    fresh_partitions()
    sessions = FetchSessions(PARTITIONS.get, turn=Turn())
    first = sessions.open(replica_id=2, fetcher_id=0)
    second = sessions.open(replica_id=2, fetcher_id=1)
    assert not first.closed and first.session_id != second.session_id
    assert sessions.find(2, first.session_id, fetcher_id=0) is first
    assert sessions.find(2, second.session_id, fetcher_id=1) is second
    crossed = sessions.find(2, first.session_id, fetcher_id=1)
    assert isinstance(crossed, Refusal) and crossed.code is ErrorCode.FETCH_SESSION_NOT_FOUND
    again = sessions.open(replica_id=2, fetcher_id=1, fetcher_count=2)
    assert second.closed and not first.closed and sessions.find(2, again.session_id, fetcher_id=1) is again


def test_a_follower_back_with_fewer_fetchers_leaves_no_session_parked():
    # Restarted with one fetcher instead of two, the follower never speaks for fetcher 1 again: its
    # session would stay parked on its partitions, woken by every append, for the leader's life.
    fresh_partitions()
    sessions = FetchSessions(PARTITIONS.get, turn=Turn())
    other_follower = sessions.open(replica_id=3, fetcher_id=1, fetcher_count=2)
    old = [sessions.open(replica_id=2, fetcher_id=i, fetcher_count=2) for i in (0, 1)]
    poll(old[1], [position(tp) for tp in PARTITIONS])
    assert all(len(p.waiters) == 1 for p in PARTITIONS.values())
    new = sessions.open(replica_id=2, fetcher_id=0, fetcher_count=1)
    assert all(s.closed for s in old) and not other_follower.closed
    assert all(len(p.waiters) == 0 for p in PARTITIONS.values())
    assert sessions.find(2, new.session_id) is new and len(sessions) == 2


def test_followers_outside_the_isr_are_looked_at_again_without_a_wake_up(monkeypatch):
    # Whether a follower may rejoin can change with time alone (an INELIGIBLE_REPLICA back-off ends).
    from replog.broker.replication import fetch_sessions

    monkeypatch.setattr(fetch_sessions, "SWEEP_INTERVAL_MS", 50)
    fresh_partitions()
    outside = {TopicPartition("t", 3)}

    def read(tp, position, hosted, bytes_left):
        answer = read_one(tp, position, hosted, bytes_left)
        return FollowerFetchAnswer(answer.error_code, "", 10, 0, answer.log_end_offset, 1,
                                   follower_in_isr=tp not in outside)

    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    with session.lock:
        session.poll(session.listed([position(tp) for tp in PARTITIONS]), read, bytes_max=1 << 20, min_bytes=1,
                     max_wait_ms=0, clock=SystemClock(), stopping=lambda: False)
        time.sleep(0.06)
        answers = session.poll(set(), read, bytes_max=1 << 20, min_bytes=1, max_wait_ms=0, clock=SystemClock(),
                               stopping=lambda: False)
    assert set(answers) == outside


def test_a_fetch_reads_in_the_brokers_turn_and_long_polls_outside_it():
    # turn.py: the reads wait while another loop (a produce's appends) holds the turn, and a long poll
    # waiting for appends must not hold it, or the appends that would wake it could never run.
    fresh_partitions()
    turn = Turn()
    session = FetchSessions(PARTITIONS.get, turn=turn).open(replica_id=2)
    first = TopicPartition("t", 1)
    answers: list = []
    with turn:
        poller = threading.Thread(target=lambda: answers.append(poll(session, [position(first)], max_wait_ms=5_000)))
        poller.start()
        time.sleep(0.1)
        assert PARTITIONS[first].reads == 0  # waiting for the turn
    wait_for(lambda: PARTITIONS[first].reads > 0, "the read once the turn is free")
    assert PARTITIONS[first].reads == 1  # read, found nothing new: now long-polling
    with turn:  # free while it waits
        PARTITIONS[first].append(2)
    poller.join(timeout=5)
    assert answers and answers[0][first].records == b"xx"


def test_a_newer_log_start_is_news_until_the_follower_names_it():
    # DeleteRecords or retention on the leader of an idle partition: no record and no HW to send, but
    # the follower must learn the new start, and once it names it the partition is quiet again.
    fresh_partitions()
    session = FetchSessions(PARTITIONS.get, turn=Turn()).open(replica_id=2)
    starts = {tp: 0 for tp in PARTITIONS}

    def read_with_start(tp, position, hosted, bytes_left):
        return read_one(tp, position, hosted, bytes_left)._replace(log_start_offset=starts[tp])

    def poll_starts(listed):
        with session.lock:
            return session.news(session.poll(session.listed(listed), read_with_start, bytes_max=1 << 20, min_bytes=1,
                                             max_wait_ms=50, clock=SystemClock(), stopping=lambda: False))

    assert poll_starts([position(tp) for tp in PARTITIONS]) == []
    trimmed = PARTITIONS[TopicPartition("t", 4)]
    starts[trimmed.tp] = 6
    trimmed.append(0)  # the step that moved the start wakes the partition's waiters
    assert [tp for tp, answer in poll_starts([]) if answer.log_start_offset == 6] == [trimmed.tp]
    named = position(trimmed.tp)
    named.log_start_offset = 6  # the follower took it, and names the partition with its new start
    trimmed.append(0)
    assert poll_starts([named]) == []
