"""The core's partition steps (leader_steps.py, follower_steps.py) on the in-memory log: their order and effects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from replog.broker.core import follower_steps
from replog.broker.core.effects import NO_EFFECTS, after_append
from replog.broker.core.errors import ErrorCode
from replog.broker.core.leader_steps import answer_follower_fetch, append_as_leader
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.core.produce.producer_state import Append, ProducerStateTable
from replog.broker.core.replica import PartitionReplica
from tests.unit.broker.core.builders import TP
from tests.unit.broker.core.fake_log import FAKE_PRODUCERS, FakeBatchHeader, FakeLog, FakeRecord


@dataclass
class Partition:
    """A `core.step_log.StepPartition` over the fake log."""

    log: FakeLog
    replica: PartitionReplica
    producer_state: ProducerStateTable = field(default_factory=ProducerStateTable)
    producer_batches: ClassVar = FAKE_PRODUCERS


def partition(broker_id: int, leader_id: int, *, isr: tuple[int, ...] = (1, 2), log: FakeLog | None = None,
              leader_epoch: int = 1) -> Partition:
    log = FakeLog() if log is None else log
    replica = PartitionReplica(TP, broker_id)
    replica.on_leader_and_isr(LeaderAndIsrDecision(TP, leader_id, leader_epoch, isr, 0, (1, 2)), log=log, now_ms=0)
    return Partition(log, replica)


def produce(leader: Partition, payload: str, *, acks: int = -1, producer_id: int = -1, sequence: int = -1):
    return append_as_leader(leader, acks=acks, min_insync_replicas=1, batch=payload,
                            header=FakeBatchHeader(producer_id, 0, sequence), fsync=False, now_ms=0)


def test_a_leader_append_writes_records_the_producer_and_reports_one_effects_value():
    leader = partition(1, 1, isr=(1,))
    answer, effects = produce(leader, "m0", producer_id=7, sequence=0)
    assert (answer.error_code, answer.base_offset, answer.leader_epoch) == (ErrorCode.NONE, 0, 1)
    assert leader.log.payloads() == ["m0"]
    assert answer.high_watermark_update.current == 1, "an ISR of only the leader commits at once"
    assert effects == after_append(hw_advanced=True)
    retried, retried_effects = produce(leader, "m0", producer_id=7, sequence=0)
    assert retried.duplicate and retried.base_offset == 0 and retried_effects is NO_EFFECTS
    assert leader.log.payloads() == ["m0"], "a retried batch appends nothing"


def test_a_refused_produce_touches_nothing():
    follower = partition(2, 1)
    answer, effects = produce(follower, "m0")
    assert answer.error_code is ErrorCode.NOT_LEADER and effects is NO_EFFECTS
    assert follower.log.log_end_offset == 0


def test_a_follower_takes_the_leaders_records_and_high_watermark():
    leader, follower = partition(1, 1), partition(2, 1)
    produce(leader, "m0", acks=1)
    read, _ = answer_follower_fetch(leader.replica, leader.log, replica_id=2, current_leader_epoch=1, fetch_offset=0,
                                    last_fetched_epoch=-1, replica_broker_epoch=102, bytes_max=10, now_ms=0)
    appended, effects = follower_steps.append_from_leader(follower, leader_epoch=1, fetch_offset=0,
                                                          records=read.records, leader_high_watermark=0)
    assert appended == follower_steps.Appended(1, False) and effects is NO_EFFECTS
    assert follower.log.payloads() == ["m0"]
    again, hw_effects = answer_follower_fetch(leader.replica, leader.log, replica_id=2, current_leader_epoch=1,
                                              fetch_offset=1, last_fetched_epoch=1,
                                              replica_broker_epoch=102, bytes_max=10, now_ms=0)
    assert again.high_watermark_update.current == 1 and hw_effects.hw_advanced
    follower_steps.append_from_leader(follower, leader_epoch=1, fetch_offset=1, records=again.records,
                                      leader_high_watermark=again.high_watermark)
    assert follower.replica.high_watermark == 1


def test_a_stale_answer_is_dropped():
    follower = partition(2, 1)
    record = FakeRecord(0, 1, "m0")
    assert follower_steps.append_from_leader(follower, leader_epoch=0, fetch_offset=0, records=[record],
                                             leader_high_watermark=0) == (None, NO_EFFECTS)
    assert follower_steps.append_from_leader(follower, leader_epoch=1, fetch_offset=3, records=[record],
                                             leader_high_watermark=0) == (None, NO_EFFECTS)
    assert follower.log.log_end_offset == 0


def test_a_diverging_epoch_cuts_the_log_and_forgets_its_producers():
    log = FakeLog()
    log.append(1, "m0", producer_id=7, producer_epoch=0, sequence=0)
    log.append(2, "m1", producer_id=7, producer_epoch=0, sequence=1)
    follower = partition(2, 1, log=log, leader_epoch=3)
    follower.producer_state = FAKE_PRODUCERS.rebuild(log, follower.producer_state.limits)
    truncated, effects = follower_steps.truncate_diverging(follower, leader_epoch=3, fetch_offset=2,
                                                           last_fetched_epoch=2, diverging=EpochEndOffset(1, 1))
    assert truncated == follower_steps.Truncated(2, 1, 0) and effects is NO_EFFECTS
    assert log.payloads() == ["m0"]
    retried = follower.producer_state.check(producer_id=7, producer_epoch=0, base_sequence=1, record_count=1)
    assert isinstance(retried, Append), "the cut batch is forgotten: its retry is appended"


def test_a_truncation_to_the_log_end_drops_an_epoch_that_has_no_record():
    log = FakeLog.with_epochs(1)
    log.assign_epoch(2)  # led in epoch 2, appended nothing
    follower = partition(2, 1, log=log, leader_epoch=3)
    truncated, _ = follower_steps.truncate_follower_to(follower, 1)
    assert truncated == follower_steps.Truncated(1, 1, 0)
    assert log.latest_epoch() == 1


def test_an_offset_below_the_leaders_log_start_starts_the_log_over_there():
    follower = partition(2, 1, log=FakeLog.with_epochs(1, 1))
    truncated, _ = follower_steps.reset_out_of_range(follower, leader_epoch=1, fetch_offset=2,
                                                     leader_log_start_offset=5, leader_log_end_offset=9)
    assert truncated == follower_steps.Truncated(2, 5, 0)
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (5, 5)


def test_a_leader_never_truncates():
    leader = partition(1, 1)
    assert follower_steps.truncate_follower_to(leader, 0) == (None, NO_EFFECTS)


def test_a_late_diverging_answer_to_a_log_that_regrew_to_the_fetch_offset_is_dropped():
    """The log was cut to 1 and grew back to 2 in leader epoch 3 since the fetch at (2, epoch 2): the answer
    to that fetch speaks of records no longer there, though the leader epoch and the log end still match."""
    log = FakeLog.with_epochs(1, 2)
    follower = partition(2, 1, log=log, leader_epoch=3)
    log.truncate_to(1)
    log.append_copy(FakeRecord(1, 3, "committed in epoch 3"))
    late, effects = follower_steps.truncate_diverging(follower, leader_epoch=3, fetch_offset=2,
                                                      last_fetched_epoch=2, diverging=EpochEndOffset(1, 1))
    assert late is None and effects is NO_EFFECTS, "a stale answer is dropped"
    assert log.payloads() == ["r0e1", "committed in epoch 3"]
