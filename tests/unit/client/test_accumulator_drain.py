"""`drain` looks only at the partitions whose state changed, and still lets every open batch leave once
its partition may send: after an answer, after a recovery, and behind the partition's ready batches."""

from __future__ import annotations

from replog.client.accumulator import Accumulator


def accumulator(max_in_flight: int = 1) -> Accumulator:
    return Accumulator(max_in_flight=max_in_flight, linger_s=0.0, batch_records_max=2, batch_bytes_max=1 << 20,
                       buffered_records_max=100_000)


def add(acc: Accumulator, partition: int = 0) -> None:
    acc.append("orders", partition, None, b"v", 0, None, 1)


def sent(acc: Accumulator) -> list[int]:
    sendable, _, _ = acc.drain()
    return [batch.partition for batch in sendable]


def test_an_open_batch_behind_a_request_in_flight_leaves_after_the_answer_and_not_before():
    acc = accumulator()
    add(acc)
    (first,) = acc.drain()[0]
    add(acc)
    assert sent(acc) == [] and sent(acc) == [], "one request in flight per partition"
    acc.done(first)
    assert sent(acc) == [0]


def test_a_pass_looks_only_at_partitions_that_changed():
    acc = accumulator()
    for partition in range(1000):
        add(acc, partition)
    firsts = acc.drain()[0]
    for partition in range(1000):
        add(acc, partition)
    assert sent(acc) == []
    assert not acc.movable, "every partition waits for its answer: nothing to look at until one comes"
    acc.done(firsts[7])
    assert list(acc.movable) == [("orders", 7)] and sent(acc) == [7]


def test_an_open_batch_waits_for_its_partitions_recovery_then_leaves():
    acc = accumulator(max_in_flight=2)
    add(acc)
    (first,) = acc.drain()[0]
    first.ordinal, first.attempts = 0, 1
    acc.retry(first)  # the partition recovers: the retried batch alone, then the rest
    add(acc)
    assert sent(acc) == [0] and acc.open, "the retried batch leaves; the open one waits for the recovery"
    acc.done(first)
    assert sent(acc) == [0] and not acc.open


def test_a_full_batch_goes_before_the_open_batch_of_its_partition():
    acc = accumulator()
    add(acc)
    (first,) = acc.drain()[0]
    add(acc)
    add(acc)  # a full batch of two: ready, behind the request in flight
    add(acc)  # and a new open batch behind it
    assert sent(acc) == []
    acc.done(first)
    (full,) = acc.drain()[0]
    assert full.records.count == 2 and len(acc.open) == 1
    acc.done(full)
    (last,) = acc.drain()[0]
    assert last.records.count == 1 and not acc.open and not acc.ready
