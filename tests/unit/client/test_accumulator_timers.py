"""The accumulator tells the sender when its first timer ends (a linger, a retry backoff), so the sender
sleeps until then: with linger_s 0 it used to wait 0 s while a batch backed off, and spun a core."""

from __future__ import annotations

import time

from replog.client.accumulator import Accumulator


def accumulator(linger_s: float = 0.0) -> Accumulator:
    return Accumulator(max_in_flight=1, linger_s=linger_s, batch_records_max=100, batch_bytes_max=1 << 20,
                       buffered_records_max=1000)


def add(acc: Accumulator, partition: int = 0) -> None:
    acc.append("orders", partition, None, b"v", 0, None, 1)


def test_a_batch_backing_off_before_its_retry_names_the_end_of_its_backoff():
    acc = accumulator()
    add(acc)
    (sent,), timer, _ = acc.drain()
    assert timer is None, "a batch in flight waits for its answer, not for a timer"
    sent.ordinal, sent.attempts, sent.retry_at_s = 0, 1, time.monotonic() + 30.0
    acc.retry(sent)
    sendable, timer, troubled = acc.drain()
    assert sendable == [] and troubled
    assert timer == sent.retry_at_s, "the sender must sleep until the backoff ends, not return at once"


def test_a_lingering_batch_names_the_end_of_its_linger_and_leaves_after_it():
    acc = accumulator(linger_s=30.0)
    add(acc, 0)
    add(acc, 1)
    sendable, timer, _ = acc.drain()
    first = min(batch.created_s for batch in acc.open.values())
    assert sendable == [] and timer == first + 30.0
    for batch in acc.open.values():
        batch.created_s -= 31.0  # both lingered long enough
    sendable, timer, _ = acc.drain()
    assert sorted(b.partition for b in sendable) == [0, 1] and timer is None


def test_nothing_to_wait_for_names_no_timer():
    acc = accumulator()
    assert acc.drain() == ([], None, False)
