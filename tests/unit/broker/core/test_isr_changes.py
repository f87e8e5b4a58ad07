"""ISR shrink and expansion proposals, one in flight, maximal ISR, controller answers."""

from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr_proposal import AlterPartitionAnswer, IsrChangeKind
from replog.broker.core.leader import AnswerIgnored, IsrCommitted, ProposalDropped

from tests.unit.broker.core.builders import TP, append, fetch_as_prefix, start_leader
from tests.unit.broker.core.fake_log import FakeLog

LAG_MS = 1_000


def accept(leader, partition_epoch=None, log=None):
    proposal = leader.pending_proposal
    answer = AlterPartitionAnswer(
        ErrorCode.NONE, 1, proposal.leader_epoch, proposal.new_isr,
        proposal.partition_epoch + 1 if partition_epoch is None else partition_epoch,
    )
    return leader.on_alter_partition_answer(answer, log)


def test_follower_that_stops_fetching_is_proposed_for_removal_after_the_lag_limit():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 3)
    fetch_as_prefix(leader, log, 2, 3, now_ms=500)
    assert leader.maybe_shrink_isr(now_ms=LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log) is None
    proposal = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    assert proposal is not None and proposal.kind is IsrChangeKind.SHRINK
    assert (proposal.topic_partition, proposal.new_isr, proposal.leader_epoch, proposal.partition_epoch) == (TP, (1, 2), 1, 0)


def test_the_leader_is_never_removed():
    log = FakeLog()
    leader = start_leader(log, isr=(1,), now_ms=0)
    append(log, leader, 3)
    assert leader.maybe_shrink_isr(now_ms=10**9, replica_lag_time_max_ms=LAG_MS, log=log) is None


def test_an_idle_follower_at_the_leader_leo_stays_but_a_silent_one_goes():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 2)
    fetch_as_prefix(leader, log, 2, 2, now_ms=1)  # replica 3 never fetches
    proposal = leader.maybe_shrink_isr(now_ms=100 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log)
    assert proposal is not None and proposal.new_isr == (1, 2)


def test_one_proposal_in_flight_and_maximal_isr_while_shrinking():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 4)
    fetch_as_prefix(leader, log, 2, 4, now_ms=10)
    fetch_as_prefix(leader, log, 3, 1, now_ms=10)
    assert leader.high_watermark == 1
    leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    assert leader.pending_proposal.new_isr == (1, 2)
    assert leader.maybe_shrink_isr(now_ms=5 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log) is None
    # Shrink pending: the HW is still held back by replica 3 (old, larger ISR).
    fetch_as_prefix(leader, log, 2, 4, now_ms=LAG_MS + 2)
    assert leader.maximal_isr == {1, 2, 3} and leader.high_watermark == 1
    outcome = accept(leader, log=log)
    assert isinstance(outcome, IsrCommitted) and outcome.isr == (1, 2) and outcome.partition_epoch == 1
    assert outcome.high_watermark_update.current == 4 and leader.high_watermark == 4


def test_returning_follower_is_proposed_once_it_reaches_the_hw():
    log = FakeLog()
    leader = start_leader(log, isr=(1, 2), now_ms=0)
    append(log, leader, 5)
    fetch_as_prefix(leader, log, 2, 5, now_ms=1)
    assert leader.high_watermark == 5
    assert fetch_as_prefix(leader, log, 3, 3, now_ms=2).isr_proposal is None
    read = fetch_as_prefix(leader, log, 3, 5, now_ms=3)
    assert read.isr_proposal is not None and read.isr_proposal.kind is IsrChangeKind.EXPAND
    assert read.isr_proposal.new_isr == (1, 2, 3)
    # Expansion pending: the new member counts for the HW at once.
    append(log, leader, 2)
    fetch_as_prefix(leader, log, 2, 7, now_ms=4)
    assert leader.maximal_isr == {1, 2, 3} and leader.high_watermark == 5
    assert isinstance(accept(leader, log=log), IsrCommitted) and leader.isr == (1, 2, 3)


def test_a_refused_proposal_is_dropped_and_proposed_again_later():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    outcome = leader.on_alter_partition_answer(AlterPartitionAnswer.failed(ErrorCode.INVALID_UPDATE_VERSION), log)
    assert isinstance(outcome, ProposalDropped) and outcome.error_code is ErrorCode.INVALID_UPDATE_VERSION
    assert leader.pending_proposal is None and leader.isr == (1, 2, 3)
    assert leader.maybe_shrink_isr(now_ms=LAG_MS + 2, replica_lag_time_max_ms=LAG_MS, log=log) is not None


def test_answers_without_a_proposal_or_for_another_epoch_are_ignored():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    stray = AlterPartitionAnswer(ErrorCode.NONE, 1, 1, (1, 2), 5)
    assert isinstance(leader.on_alter_partition_answer(stray, log), AnswerIgnored)
    append(log, leader, 1)
    leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    other_epoch = AlterPartitionAnswer(ErrorCode.NONE, 1, 7, (1,), 5)
    assert isinstance(leader.on_alter_partition_answer(other_epoch, log), AnswerIgnored)
    assert leader.isr == (1, 2, 3) and leader.pending_proposal is None


def test_leader_and_isr_update_replaces_a_pending_proposal():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 2)
    fetch_as_prefix(leader, log, 2, 2, now_ms=1)
    leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    update = leader.apply_committed_state(replicas=(1, 2, 3), isr=(1, 2), partition_epoch=3, log=log, now_ms=LAG_MS + 2)
    assert leader.pending_proposal is None and leader.isr == (1, 2) and leader.partition_epoch == 3
    assert update.current == 2


def test_removed_replica_is_no_longer_tracked():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    leader.apply_committed_state(replicas=(1, 2), isr=(1, 2), partition_epoch=1, log=log, now_ms=0)
    fetch_as_prefix(leader, log, 2, 0, now_ms=1)
    result = leader.on_follower_fetch(
        replica_id=3, current_leader_epoch=1, fetch_offset=0, last_fetched_epoch=-1, now_ms=1, log=log
    )
    assert result.code is ErrorCode.NOT_ASSIGNED_REPLICA
