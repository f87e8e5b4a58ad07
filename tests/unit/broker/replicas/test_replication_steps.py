"""The adapter's leader and follower steps over real partition logs, in one process:
what a ReplicaFetch round trip does to two replicas, without gRPC or threads.

A story per test, each step the function a servicer or fetcher thread calls."""

from __future__ import annotations

from pathlib import Path

from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log import LogConfig, PartitionLog
from replog.broker.replicas.follower_side import append_from_leader, fetch_position, truncate_diverging
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import (
    append_produced,
    list_offset,
    read_for_consumer,
    read_for_follower,
)
from replog.broker.replicas.long_poll import Waiter
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import decode_records, encode_batch, validate_batch

TP = TopicPartition("orders", 0)
REPLICAS = (1, 2)


def hosted(tmp_path: Path, broker_id: int, clock: ManualClock) -> HostedPartition:
    log = PartitionLog.open(tmp_path / f"b{broker_id}" / "orders-0", LogConfig(), clock)
    return HostedPartition(TP, broker_id, log, high_watermark=0, producer_state=rebuild_from_log(log))


def decide(replica: HostedPartition, leader: int, leader_epoch: int, isr=REPLICAS, partition_epoch: int | None = None):
    decision = LeaderAndIsrDecision(TP, leader, leader_epoch, tuple(isr),
                                    leader_epoch if partition_epoch is None else partition_epoch, REPLICAS)
    outcome, _ = replica.apply_leader_and_isr(decision, now_ms=0)
    return outcome


def produce(leader: HostedPartition, values: list[bytes], *, acks: int = -1, producer_id: int = -1,
            sequence: int = -1):
    batch = encode_batch([(None, v, 1000) for v in values], producer_id=producer_id,
                         producer_epoch=0 if producer_id >= 0 else -1, base_sequence=sequence)
    return append_produced(leader, acks=acks, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                           fsync=False, now_ms=0)


def fetch_round(leader: HostedPartition, follower: HostedPartition, leader_epoch: int):
    """One ReplicaFetch: the follower's position, the leader's answer, the follower's step."""
    position = fetch_position(follower, leader_epoch=leader_epoch)
    answer = read_for_follower(leader, replica_id=follower.broker_id, current_leader_epoch=leader_epoch,
                               fetch_offset=position.fetch_offset, last_fetched_epoch=position.last_fetched_epoch,
                               replica_broker_epoch=100 + follower.broker_id, bytes_max=1 << 20, now_ms=0)
    if answer.diverging is not None:
        return truncate_diverging(follower, leader_epoch=leader_epoch, fetch_offset=position.fetch_offset,
                                  last_fetched_epoch=position.last_fetched_epoch, diverging=answer.diverging)
    append_from_leader(follower, leader_epoch=leader_epoch, fetch_offset=position.fetch_offset,
                       records=answer.records, leader_high_watermark=answer.high_watermark)
    return answer


def values(replica: HostedPartition) -> list[bytes]:
    return [r.value for r in decode_records(replica.log.read(0, 1 << 20))]


def test_records_reach_the_follower_and_the_hw_follows_two_fetches_later(tmp_path):
    clock = ManualClock()
    leader, follower = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(leader, 1, 0)
    decide(follower, 1, 0)
    appended = produce(leader, [b"a", b"b"])
    assert appended.error_code is ErrorCode.NONE and appended.base_offset == 0
    assert read_for_consumer(leader, current_leader_epoch=-1, fetch_offset=0, bytes_max=1 << 20).records == b""

    first = fetch_round(leader, follower, 0)  # carries the records; the HW cannot move yet
    assert first.records and first.high_watermark == 0
    second = fetch_round(leader, follower, 0)  # the follower's new LEO moves the HW
    assert second.high_watermark_update.advanced and second.high_watermark == 2
    visible = read_for_consumer(leader, current_leader_epoch=-1, fetch_offset=0, bytes_max=1 << 20)
    assert [r.value for r in decode_records(visible.records)] == [b"a", b"b"]
    assert list_offset(leader, spec="latest", timestamp_ms=0, current_leader_epoch=-1).offset == 2
    fetch_round(leader, follower, 0)
    assert follower.replica.high_watermark == 2


def test_new_leader_answers_a_retry_with_its_original_offset(tmp_path):
    clock = ManualClock()
    old, new = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(old, 1, 0)
    decide(new, 1, 0)
    produce(old, [b"p0", b"p1"], producer_id=7, sequence=0)
    fetch_round(old, new, 0)
    # Leadership moves before the producer saw the ack; it retries the same batch at the new leader.
    decide(new, 2, 1, isr=(2,))
    retry = produce(new, [b"p0", b"p1"], producer_id=7, sequence=0)
    assert retry.error_code is ErrorCode.NONE and retry.duplicate and retry.base_offset == 0
    assert produce(new, [b"p2"], producer_id=7, sequence=2).base_offset == 2
    assert produce(new, [b"p9"], producer_id=7, sequence=9).error_code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert values(new) == [b"p0", b"p1", b"p2"]


def test_diverged_follower_truncates_to_the_last_common_epoch_and_forgets_its_producer_state(tmp_path):
    clock = ManualClock()
    a, b = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(a, 1, 0)
    decide(b, 1, 0)
    produce(a, [b"m1"], acks=1)
    fetch_round(a, b, 0)
    produce(a, [b"m2"], acks=1, producer_id=5, sequence=0)  # only on a
    # b is elected (epoch 1) and writes m3 where a holds m2; a follows b.
    decide(b, 2, 1, isr=(2,))
    produce(b, [b"m3"], acks=1)
    decide(a, 2, 1, isr=(2,))
    truncated = fetch_round(b, a, 1)
    assert (truncated.log_end_offset_before, truncated.log_end_offset_after) == (2, 1)
    assert a.producer_state.producer_epoch(5) is None, "the truncated batch's producer is forgotten"
    fetch_round(b, a, 1)
    assert values(a) == values(b) == [b"m1", b"m3"]


def test_refused_produce_changes_nothing(tmp_path):
    clock = ManualClock()
    leader, follower = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(leader, 1, 0)
    decide(follower, 1, 0)
    batch = encode_batch([(None, b"x", 1000)])
    refused = append_produced(leader, acks=-1, min_insync_replicas=3, batch=batch, header=validate_batch(batch),
                              fsync=False, now_ms=0)
    assert refused.error_code is ErrorCode.NOT_ENOUGH_REPLICAS
    not_leader = append_produced(follower, acks=1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                                 fsync=False, now_ms=0)
    assert not_leader.error_code is ErrorCode.NOT_LEADER
    assert leader.log.log_end_offset == follower.log.log_end_offset == 0


def test_an_isr_only_change_wakes_only_the_sessions_of_followers_outside_the_isr(tmp_path):
    clock = ManualClock()
    leader = hosted(tmp_path, 1, clock)
    replicas = (1, 2, 3)

    def apply(isr, partition_epoch):
        outcome, hw_update = leader.apply_leader_and_isr(
            LeaderAndIsrDecision(TP, 1, 1, isr, partition_epoch, replicas), now_ms=0)
        return hw_update

    def fetch(replica_id, offset):
        read_for_follower(leader, replica_id=replica_id, current_leader_epoch=1, fetch_offset=offset,
                          last_fetched_epoch=1 if offset else -1,
                          replica_broker_epoch=100 + replica_id, bytes_max=1 << 20, now_ms=0)

    apply((1, 2, 3), 1)
    produce(leader, [b"a", b"b"])
    fetch(2, 2)  # follower 2 has both records, follower 3 none: the HW waits for 3
    fetch(3, 0)
    assert leader.replica.high_watermark == 0
    follower_2, follower_3, consumer = Waiter(2), Waiter(3), Waiter()
    for waiter in (follower_2, follower_3, consumer):
        leader.add_waiter(waiter)

    # Follower 3 leaves the ISR: the HW moves to 2, so every parked read has news.
    assert apply((1, 2), 2).current == 2
    assert all(w.take() == {id(leader)} for w in (follower_2, follower_3, consumer))

    # A new partition epoch that moves neither the HW nor the assignment: a parked read would
    # answer the same, except that follower 3 (outside the ISR) may be proposed back in, so
    # only its session is woken.
    assert not apply((1, 2), 3).advanced
    assert follower_3.take() == {id(leader)}
    assert follower_2.take() == set() == consumer.take()

    # A leadership change wakes everyone (they must hear NOT_LEADER).
    leader.apply_leader_and_isr(LeaderAndIsrDecision(TP, 2, 2, (1, 2), 4, replicas), now_ms=0)
    assert all(w.take() == {id(leader)} for w in (follower_2, follower_3, consumer))


def test_a_fetch_that_moves_the_hw_wakes_the_consumers_not_the_follower_sessions(tmp_path):
    clock = ManualClock()
    leader = hosted(tmp_path, 1, clock)
    replicas = (1, 2, 3)
    leader.apply_leader_and_isr(LeaderAndIsrDecision(TP, 1, 1, replicas, 1, replicas), now_ms=0)
    produce(leader, [b"a", b"b"])
    follower_2, follower_3, consumer = Waiter(2), Waiter(3), Waiter()
    for waiter in (follower_2, follower_3, consumer):
        leader.add_waiter(waiter)
    follower_2.take(), follower_3.take(), consumer.take()  # the append's wake-ups

    def fetch(replica_id):
        return read_for_follower(leader, replica_id=replica_id, current_leader_epoch=1, fetch_offset=2,
                                 last_fetched_epoch=1,
                                 replica_broker_epoch=100 + replica_id, bytes_max=1 << 20, now_ms=0)

    fetch(2)  # the HW still waits for follower 3
    assert leader.replica.high_watermark == 0
    assert follower_2.take() == set() == follower_3.take() == consumer.take()

    # Follower 3's fetch moves the HW. Its answer says so, and a consumer waiting for committed
    # records is woken. The followers' sessions wait for records, which the HW brings none of:
    # they are told (to read the partition again before they answer) but left asleep.
    answer = fetch(3)
    assert answer.high_watermark == 2
    assert consumer.wait(0) and consumer.take() == {id(leader)}
    for session in (follower_2, follower_3):
        assert not session.wait(0)
        assert session.take() == {id(leader)}
    assert fetch(2).high_watermark == 2


def test_in_the_durable_mode_the_follower_fsyncs_before_its_next_fetch_reports_the_position(tmp_path):
    clock = ManualClock()
    leader = hosted(tmp_path, 1, clock)
    lazy, durable = hosted(tmp_path / "lazy", 2, clock), hosted(tmp_path / "durable", 2, clock)
    for replica in (leader, lazy, durable):
        decide(replica, 1, 0)
    produce(leader, [b"a", b"b"])
    answer = read_for_follower(leader, replica_id=2, current_leader_epoch=0, fetch_offset=0, last_fetched_epoch=-1,
                               replica_broker_epoch=102, bytes_max=1 << 20, now_ms=0)

    append_from_leader(lazy, leader_epoch=0, fetch_offset=0, records=answer.records,
                       leader_high_watermark=answer.high_watermark)
    append_from_leader(durable, leader_epoch=0, fetch_offset=0, records=answer.records,
                       leader_high_watermark=answer.high_watermark, fsync=True)

    assert fetch_position(lazy, leader_epoch=0).fetch_offset == 2 and lazy.log.recovery_point == 0
    assert fetch_position(durable, leader_epoch=0).fetch_offset == 2 and durable.log.recovery_point == 2
