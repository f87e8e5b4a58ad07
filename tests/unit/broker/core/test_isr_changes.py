"""ISR shrink and expansion proposals, one in flight, maximal ISR, controller answers."""

import dataclasses

from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr.isr_answer import (
    AnswerIgnored, IsrCommitted, IsrRefreshed, ProposalDropped, ProposalStillPending,
)
from replog.broker.core.isr.isr_proposal import INELIGIBLE_RETRY_MS, AlterPartitionAnswer, IsrChangeKind

from tests.unit.broker.core.builders import TP, append, fetch_as_prefix, start_leader
from tests.unit.broker.core.fake_log import FakeLog

LAG_MS = 1_000


def accept(leader, log):
    proposal = leader.pending_proposal
    answer = AlterPartitionAnswer(ErrorCode.NONE, 1, proposal.leader_epoch, proposal.new_isr, proposal.partition_epoch + 1)
    return leader.on_alter_partition_answer(proposal, answer, log)


def refuse(leader, log, code=ErrorCode.INELIGIBLE_REPLICA):
    """A refusal carrying the controller's current (unchanged) state."""
    proposal = leader.pending_proposal
    answer = AlterPartitionAnswer(code, 1, leader.leader_epoch, leader.isr, leader.partition_epoch)
    return leader.on_alter_partition_answer(proposal, answer, log)


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


def test_an_append_after_a_long_idle_does_not_push_out_followers_that_held_the_whole_log():
    # An idle follower at the leader's LEO is not fetched again (its session reads nothing for it), so its
    # last fetch ages; the append ending the idle must not make it lag by more than the limit at once.
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 2, now_ms=0)
    fetch_as_prefix(leader, log, 2, 2, now_ms=10)
    fetch_as_prefix(leader, log, 3, 2, now_ms=10)
    append(log, leader, 1, now_ms=10 * LAG_MS)
    assert leader.maybe_shrink_isr(now_ms=10 * LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log) is None
    fetch_as_prefix(leader, log, 2, 3, now_ms=10 * LAG_MS + 5)  # replica 3 never fetches the new record
    assert leader.maybe_shrink_isr(now_ms=11 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log) is None
    proposal = leader.maybe_shrink_isr(now_ms=11 * LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
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
    outcome = accept(leader, log)
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
    assert isinstance(accept(leader, log), IsrCommitted) and leader.isr == (1, 2, 3)


def test_a_joining_member_is_named_with_the_broker_epoch_of_the_fetch_that_caught_it_up():
    # KIP-903: the controller accepts the member only in that registration, so a proposal resent after
    # the member restarted (and registered again) cannot add an incarnation that never caught up.
    log = FakeLog()
    leader = start_leader(log, isr=(1, 2), now_ms=0)
    append(log, leader, 5)
    fetch_as_prefix(leader, log, 2, 5, now_ms=1, broker_epoch=102)
    assert fetch_as_prefix(leader, log, 3, 3, now_ms=2, broker_epoch=103).isr_proposal is None
    read = fetch_as_prefix(leader, log, 3, 5, now_ms=3, broker_epoch=303)  # restarted since its last fetch
    proposal = read.isr_proposal
    assert proposal.new_isr == (1, 2, 3) and proposal.new_isr_broker_epochs == (0, 102, 303)
    assert leader.proposal_to_resend == proposal  # a resend names the same incarnation
    # A shrink names what the members' fetches said too (the controller does not judge members that stay).
    assert isinstance(accept(leader, log), IsrCommitted)
    append(log, leader, 1, now_ms=4)
    fetch_as_prefix(leader, log, 2, 6, now_ms=5, broker_epoch=102)
    shrink = leader.maybe_shrink_isr(now_ms=10 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log)
    assert shrink.new_isr == (1, 2) and shrink.new_isr_broker_epochs == (0, 102)


def test_a_refused_proposal_is_dropped_and_proposed_again_later():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    outcome = refuse(leader, log)
    assert isinstance(outcome, ProposalDropped) and outcome.error_code is ErrorCode.INELIGIBLE_REPLICA
    assert leader.pending_proposal is None and leader.isr == (1, 2, 3)
    assert leader.maybe_shrink_isr(now_ms=LAG_MS + 2, replica_lag_time_max_ms=LAG_MS, log=log) is not None


def test_a_follower_refused_as_ineligible_is_not_proposed_again_on_every_fetch():
    # A shutting-down broker keeps fetching until it exits (KIP-841): one proposal per back-off, not per fetch.
    log = FakeLog()
    leader = start_leader(log, isr=(1, 2), now_ms=0)
    append(log, leader, 5)
    fetch_as_prefix(leader, log, 2, 5, now_ms=1)
    assert fetch_as_prefix(leader, log, 3, 5, now_ms=2).isr_proposal is not None
    assert isinstance(refuse(leader, log), ProposalDropped)
    assert fetch_as_prefix(leader, log, 3, 5, now_ms=10).isr_proposal is None  # the back-off starts here
    assert fetch_as_prefix(leader, log, 3, 5, now_ms=10 + INELIGIBLE_RETRY_MS - 1).isr_proposal is None
    again = fetch_as_prefix(leader, log, 3, 5, now_ms=10 + INELIGIBLE_RETRY_MS).isr_proposal
    assert again is not None and again.new_isr == (1, 2, 3)


def test_fenced_leader_keeps_its_proposal_and_waits_for_leader_and_isr():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    proposal = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    fenced = AlterPartitionAnswer(ErrorCode.FENCED_LEADER_EPOCH, 1, 7, (1,), 5)
    outcome = leader.on_alter_partition_answer(proposal, fenced, log)
    assert isinstance(outcome, ProposalStillPending) and not outcome.resend
    assert leader.pending_proposal == proposal and leader.proposal_to_resend is None
    assert leader.maybe_shrink_isr(now_ms=5 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log) is None
    leader.apply_committed_state(replicas=(1, 2, 3), isr=(1, 2), partition_epoch=1, log=log, now_ms=5 * LAG_MS)
    assert leader.pending_proposal is None and leader.isr == (1, 2)


def test_an_unexplained_refusal_is_resent():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    proposal = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    busy = AlterPartitionAnswer(ErrorCode.OPERATION_NOT_ATTEMPTED, 1, 1, (1, 2, 3), 0)
    outcome = leader.on_alter_partition_answer(proposal, busy, log)
    assert isinstance(outcome, ProposalStillPending) and outcome.resend
    assert leader.proposal_to_resend == proposal


def test_a_late_answer_to_an_old_proposal_leaves_the_pending_one_alone():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 2)
    fetch_as_prefix(leader, log, 2, 2, now_ms=1)
    first = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    refuse(leader, log)
    append(log, leader, 1)
    second = leader.maybe_shrink_isr(now_ms=3 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log)
    assert (first.new_isr, second.new_isr) == ((1, 2), (1,))  # by now replica 2 lags as well
    late = AlterPartitionAnswer(ErrorCode.INELIGIBLE_REPLICA, 1, 1, (1, 2, 3), 0)
    assert isinstance(leader.on_alter_partition_answer(first, late, log), AnswerIgnored)
    assert leader.pending_proposal == second


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
        replica_id=3, current_leader_epoch=1, fetch_offset=0, last_fetched_epoch=-1,
        replica_broker_epoch=103, now_ms=1, log=log
    )
    assert result.code is ErrorCode.NOT_ASSIGNED_REPLICA


def test_a_lost_expansion_answer_keeps_counting_the_new_member():
    """No answer is not a refusal: the controller may have committed the expansion."""
    log = FakeLog()
    leader = start_leader(log, isr=(1, 2), now_ms=0)
    append(log, leader, 3)
    fetch_as_prefix(leader, log, 2, 3, now_ms=1)
    proposal = fetch_as_prefix(leader, log, 3, 3, now_ms=2).isr_proposal
    assert proposal.new_isr == (1, 2, 3)
    # The RPC times out (the adapter calls nothing); the controller did commit (1, 2, 3) at epoch 1.
    append(log, leader, 2)
    fetch_as_prefix(leader, log, 2, 5, now_ms=3)
    assert leader.pending_proposal == proposal and leader.high_watermark == 3, "replica 3 still counts"
    # The adapter resends the same proposal; the controller answers with its newer state.
    resent = AlterPartitionAnswer(ErrorCode.INVALID_UPDATE_VERSION, 1, 1, (1, 2, 3), 1)
    outcome = leader.on_alter_partition_answer(proposal, resent, log)
    assert isinstance(outcome, IsrRefreshed) and leader.isr == (1, 2, 3) and leader.partition_epoch == 1
    assert leader.pending_proposal is None and leader.high_watermark == 3


def test_a_newer_state_for_our_epoch_is_adopted_even_from_a_stray_answer():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    proposal = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    leader.on_alter_partition_answer(proposal, AlterPartitionAnswer(ErrorCode.INELIGIBLE_REPLICA, 1, 1, (1, 2, 3), 0), log)
    stray = AlterPartitionAnswer(ErrorCode.NONE, 1, 1, (1, 2), 1)
    assert isinstance(leader.on_alter_partition_answer(proposal, stray, log), IsrRefreshed)
    assert leader.isr == (1, 2) and leader.partition_epoch == 1


def test_a_newer_state_from_a_stray_answer_ends_the_proposal_made_at_the_older_epoch():
    """Found by the simulation over the real controller: the pending proposal, made at partition epoch 0,
    outlived the adoption of epoch 1; its resend was refused INVALID_UPDATE_VERSION with the state the leader
    already held, so it waited for a LeaderAndIsr that never came and never proposed again."""
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    proposal = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    assert proposal.partition_epoch == 0
    earlier = dataclasses.replace(proposal, new_isr=(1, 3))  # an earlier proposal, whose answer comes late
    stray = AlterPartitionAnswer(ErrorCode.NONE, 1, 1, (1, 3), 1)
    assert isinstance(leader.on_alter_partition_answer(earlier, stray, log), IsrRefreshed)
    assert leader.pending_proposal is None and leader.isr == (1, 3) and leader.partition_epoch == 1
    again = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    assert again is not None and again.partition_epoch == 1 and again.new_isr == (1,)


def test_a_stale_version_refusal_for_another_leader_epoch_keeps_the_proposal():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 1)
    proposal = leader.maybe_shrink_isr(now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS, log=log)
    refusal = AlterPartitionAnswer(ErrorCode.INVALID_UPDATE_VERSION, 2, 2, (2, 3), 4)
    outcome = leader.on_alter_partition_answer(proposal, refusal, log)
    assert isinstance(outcome, ProposalStillPending) and not outcome.resend
    assert leader.isr == (1, 2, 3) and leader.partition_epoch == 0


def test_expansion_committed_then_fenced_still_counts_the_new_member():
    """Found by the simulation (seed 5001 at 800 steps): the expansion's answer was lost, the
    controller then moved to a new leader epoch keeping the new member; the resend is fenced.
    Dropping the proposal would let the HW pass a replica the controller may elect."""
    log = FakeLog()
    leader = start_leader(log, isr=(1, 2), now_ms=0)
    append(log, leader, 3)
    fetch_as_prefix(leader, log, 2, 3, now_ms=1)
    proposal = fetch_as_prefix(leader, log, 3, 3, now_ms=2).isr_proposal  # add replica 3; answer lost
    fenced = AlterPartitionAnswer(ErrorCode.FENCED_LEADER_EPOCH, 1, 2, (1, 3), 3)  # controller: epoch 2, ISR (1, 3)
    leader.on_alter_partition_answer(proposal, fenced, log)
    append(log, leader, 2)
    fetch_as_prefix(leader, log, 2, 5, now_ms=3)
    assert 3 in leader.maximal_isr and leader.high_watermark == 3, "replica 3 (in the controller's ISR) holds only 3"


def test_repeated_fetches_from_an_idle_follower_keep_it_in_sync_and_the_hw_where_it_is():
    log = FakeLog()
    leader = start_leader(log, now_ms=0)
    append(log, leader, 3)
    fetch_as_prefix(leader, log, 2, 3, now_ms=10)
    fetch_as_prefix(leader, log, 3, 3, now_ms=10)
    assert leader.high_watermark == 3
    for now_ms in range(100, 10 * LAG_MS, 100):  # the same position again and again
        read = fetch_as_prefix(leader, log, 2, 3, now_ms=now_ms)
        fetch_as_prefix(leader, log, 3, 3, now_ms=now_ms)
        assert read.high_watermark == 3 and not read.high_watermark_update.advanced
    assert leader.maybe_shrink_isr(now_ms=10 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log) is None
    append(log, leader, 2)  # records arrive; a follower that stays behind is caught up only until then
    fetch_as_prefix(leader, log, 2, 5, now_ms=10 * LAG_MS + 1)
    fetch_as_prefix(leader, log, 3, 3, now_ms=10 * LAG_MS + 1)
    assert leader.high_watermark == 3
    proposal = leader.maybe_shrink_isr(now_ms=12 * LAG_MS, replica_lag_time_max_ms=LAG_MS, log=log)
    assert proposal is not None and proposal.new_isr == (1, 2)


def test_a_refused_expansion_releases_the_hw_it_was_holding_back():
    # The pending expansion counts the joining follower; once refused, the HW must not wait for it,
    # even if no fetch ever comes again (an idle follower in a fetch session is not re-read).
    log = FakeLog()
    leader = start_leader(log, isr=(1, 2), now_ms=0)
    append(log, leader, 5)
    fetch_as_prefix(leader, log, 2, 5, now_ms=1)
    assert fetch_as_prefix(leader, log, 3, 5, now_ms=2).isr_proposal is not None
    append(log, leader, 1)
    fetch_as_prefix(leader, log, 2, 6, now_ms=3)
    assert leader.high_watermark == 5  # held back by the joining replica 3
    outcome = refuse(leader, log)
    assert isinstance(outcome, ProposalDropped) and outcome.high_watermark_update.advanced
    assert leader.high_watermark == 6
