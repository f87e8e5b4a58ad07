"""Produce admission and the completion of delayed (acks=-1) produces."""

import pytest

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.produce.produce import (
    DelayedProduce,
    ProduceAdmitted,
    ProduceProgress,
    ProduceWait,
    admit_produce,
    produce_completion,
)
from replog.broker.core.produce.purgatory import AddOutcome, Purgatory
from replog.common.core.partitions import TopicPartition

TP = TopicPartition("orders", 0)
TP2 = TopicPartition("orders", 1)


@pytest.mark.parametrize(
    "acks, is_leader, isr_size, code",
    [
        (2, True, 3, ErrorCode.INVALID_REQUIRED_ACKS),
        (-2, False, 1, ErrorCode.INVALID_REQUIRED_ACKS),  # acks are checked first
        (1, False, 3, ErrorCode.NOT_LEADER),
        (-1, True, 1, ErrorCode.NOT_ENOUGH_REPLICAS),
    ],
)
def test_refused_produces(acks, is_leader, isr_size, code):
    result = admit_produce(acks=acks, is_leader=is_leader, isr_size=isr_size, min_insync_replicas=2)
    assert isinstance(result, Refusal) and result.code is code


@pytest.mark.parametrize("acks, waits", [(0, False), (1, False), (-1, True)])
def test_admitted_produces(acks, waits):
    result = admit_produce(acks=acks, is_leader=True, isr_size=1 if acks != -1 else 2, min_insync_replicas=2)
    assert result == ProduceAdmitted(acks) and result.waits_for_replication is waits


WAIT = ProduceWait(TP, leader_epoch=3, base_offset=10, last_offset=12, min_insync_replicas=2)


def progress(hw, isr_size=3, leader_epoch=3, is_leader=True, leading_since_epoch=3):
    return ProduceProgress(is_leader=is_leader, leader_epoch=leader_epoch, high_watermark=hw, isr_size=isr_size,
                           leading_since_epoch=leading_since_epoch if is_leader else -1)


def test_waits_until_the_hw_passes_the_last_offset():
    assert produce_completion(WAIT, progress(hw=12)) is None
    result = produce_completion(WAIT, progress(hw=13))
    assert result.error_code is ErrorCode.NONE and result.base_offset == 10 and result.leader_epoch == 3


def test_committed_on_too_few_replicas_is_reported_after_append():
    assert produce_completion(WAIT, progress(hw=13, isr_size=1)).error_code is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


@pytest.mark.parametrize("lost", [progress(hw=20, is_leader=False),
                                  progress(hw=20, leader_epoch=5, leading_since_epoch=5)])
def test_lost_leadership_is_not_leader_even_if_the_hw_moved(lost):
    assert produce_completion(WAIT, lost).error_code is ErrorCode.NOT_LEADER


def test_a_leader_epoch_bump_under_the_same_leader_keeps_waiting_then_completes():
    assert produce_completion(WAIT, progress(hw=12, leader_epoch=4, leading_since_epoch=3)) is None
    result = produce_completion(WAIT, progress(hw=13, leader_epoch=4, leading_since_epoch=3))
    assert result.error_code is ErrorCode.NONE and result.leader_epoch == 3


def test_delayed_produce_in_purgatory_completes_on_hw_and_expires_otherwise():
    state = {TP: progress(hw=0), TP2: progress(hw=0)}
    waits = [WAIT, ProduceWait(TP2, leader_epoch=3, base_offset=0, last_offset=0, min_insync_replicas=2)]
    op = DelayedProduce(waits, state.__getitem__)
    purgatory: Purgatory[DelayedProduce, TopicPartition] = Purgatory(operations_max=10)
    assert purgatory.add(op, op.keys, deadline_ms=1_000) is AddOutcome.WATCHING

    state[TP2] = progress(hw=1)
    assert purgatory.check(TP2) == []  # TP still waiting
    state[TP] = progress(hw=13)
    assert purgatory.check(TP) == [op]
    assert [r.error_code for r in op.results] == [ErrorCode.NONE, ErrorCode.NONE]
    assert purgatory.expire(now_ms=5_000) == []


def test_timeout_keeps_resolved_partitions_and_times_out_the_rest():
    state = {TP: progress(hw=0), TP2: progress(hw=1)}
    waits = [WAIT, ProduceWait(TP2, leader_epoch=3, base_offset=0, last_offset=0, min_insync_replicas=2)]
    op = DelayedProduce(waits, state.__getitem__)
    purgatory: Purgatory[DelayedProduce, TopicPartition] = Purgatory(operations_max=10)
    purgatory.add(op, op.keys, deadline_ms=1_000)
    assert purgatory.expire(now_ms=999) == []
    assert purgatory.expire(now_ms=1_000) == [op]
    assert [r.error_code for r in op.results] == [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NONE]


def test_a_check_on_one_partition_reads_only_that_partition():
    # A request over thousands of partitions must not re-read all of them on every HW advance.
    state = {TP: progress(hw=0), TP2: progress(hw=0)}
    reads: list[TopicPartition] = []

    def progress_of(tp):
        reads.append(tp)
        return state[tp]

    waits = [WAIT, ProduceWait(TP2, leader_epoch=3, base_offset=0, last_offset=0, min_insync_replicas=2)]
    op = DelayedProduce(waits, progress_of)
    purgatory: Purgatory[DelayedProduce, TopicPartition] = Purgatory(operations_max=10)
    purgatory.add(op, op.keys, deadline_ms=1_000)
    reads.clear()
    state[TP2] = progress(hw=1)
    assert purgatory.check(TP2) == [] and reads == [TP2]
    reads.clear()
    state[TP] = progress(hw=13)
    assert purgatory.check(TP) == [op] and reads == [TP]
