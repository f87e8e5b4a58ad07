"""Follower truncation to the last common leader epoch (KIP-101, KIP-279, KIP-320), on fake logs."""

from replog.broker.core.fetch.divergence import find_divergence
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.log_view import EpochEndOffset, epoch_end_offset
from replog.broker.core.partition import ChangeKind, LeaderAndIsrDecision
from replog.broker.core.replica import PartitionReplica
from replog.broker.core.fetch.truncation import (
    AskLeaderForEpoch,
    TruncateTo,
    first_truncation_step,
    on_diverging_epoch,
    on_leader_epoch_end,
)

from tests.unit.broker.core.builders import TP
from tests.unit.broker.core.fake_log import FakeLog


def truncate_via_offset_for_leader_epoch(follower: FakeLog, leader: FakeLog) -> int:
    """Run the KIP-279 loop to its end, applying each truncation; returns the rounds asked."""
    decision = first_truncation_step(follower)
    rounds = 0
    while isinstance(decision, AskLeaderForEpoch):
        follower.truncate_to(decision.truncate_to_offset)
        answer = epoch_end_offset(leader, decision.leader_epoch)
        decision = on_leader_epoch_end(follower, asked_epoch=decision.leader_epoch, answer=answer)
        rounds += 1
    assert isinstance(decision, TruncateTo), decision
    follower.truncate_to(decision.offset)
    return rounds


def truncate_via_fetch(follower: FakeLog, leader: FakeLog) -> int:
    """Fetch, truncate on each diverging answer, until the fetch is consistent; returns the divergences."""
    divergences = 0
    while True:
        diverging = find_divergence(
            leader, fetch_offset=follower.log_end_offset, last_fetched_epoch=follower.latest_epoch()
        )
        if diverging is None:
            return divergences
        decision = on_diverging_epoch(follower, last_fetched_epoch=follower.latest_epoch(), diverging=diverging)
        assert not isinstance(decision, Refusal)
        follower.truncate_to(decision.truncate_to_offset if isinstance(decision, AskLeaderForEpoch) else decision.offset)
        divergences += 1


def catch_up(follower: FakeLog, leader: FakeLog) -> None:
    for record in leader.records_between(follower.log_end_offset, leader.log_end_offset):
        follower.append_copy(record)


# --- the rule ----------------------------------------------------------------------------


def test_empty_follower_has_nothing_to_truncate():
    assert first_truncation_step(FakeLog()) == TruncateTo(0)


def test_same_epoch_keeps_the_shorter_end():
    follower = FakeLog.with_epochs(0, 0, 1, 1, 1)
    assert on_leader_epoch_end(follower, asked_epoch=1, answer=EpochEndOffset(1, 4)) == TruncateTo(4)
    assert on_leader_epoch_end(follower, asked_epoch=1, answer=EpochEndOffset(1, 9)) == TruncateTo(5)


def test_leader_lacking_our_epoch_makes_us_drop_it_and_ask_again():
    follower = FakeLog.with_epochs(0, 0, 2, 2)
    decision = on_leader_epoch_end(follower, asked_epoch=2, answer=EpochEndOffset(1, 3))
    assert decision == AskLeaderForEpoch(leader_epoch=0, truncate_to_offset=2)


def test_leader_answer_in_an_epoch_we_hold_below_our_latest():
    follower = FakeLog.with_epochs(0, 0, 2, 2)
    assert on_leader_epoch_end(follower, asked_epoch=2, answer=EpochEndOffset(0, 1)) == TruncateTo(1)


def test_nothing_in_common_truncates_everything_but_never_below_log_start():
    follower = FakeLog(log_start_offset=5)
    for _ in range(3):
        follower.append(2, "x")
    assert on_leader_epoch_end(follower, asked_epoch=2, answer=EpochEndOffset(-1, -1)) == TruncateTo(5)
    assert on_leader_epoch_end(follower, asked_epoch=2, answer=EpochEndOffset(2, 1)) == TruncateTo(5)


def test_answer_about_a_newer_epoch_than_asked_is_a_peer_error():
    follower = FakeLog.with_epochs(0, 1)
    refusal = on_leader_epoch_end(follower, asked_epoch=1, answer=EpochEndOffset(3, 2))
    assert isinstance(refusal, Refusal) and refusal.code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_kip_279_loop_finds_the_last_common_epoch_over_several_rounds():
    # The follower led epochs 2 and 4 as a zombie; the leader's history has 1 and 3 instead.
    follower = FakeLog.with_epochs(0, 0, 2, 2, 4)
    leader = FakeLog.with_epochs(0, 0, 1, 1, 3, 3)
    assert truncate_via_offset_for_leader_epoch(follower, leader) == 3
    assert follower.epochs() == [0, 0]
    catch_up(follower, leader)
    assert follower.payloads() == leader.payloads()


def test_fetch_path_reaches_the_same_point():
    follower = FakeLog.with_epochs(0, 0, 2, 2, 4)
    leader = FakeLog.with_epochs(0, 0, 1, 1, 3, 3)
    assert truncate_via_fetch(follower, leader) == 2
    catch_up(follower, leader)
    assert follower.payloads() == leader.payloads()


# --- KIP-101 scenario 1: HW truncation followed by immediate leader election ---------------


def decision(leader_id, leader_epoch, isr=(1, 2), partition_epoch=0):
    return LeaderAndIsrDecision(TP, leader_id, leader_epoch, isr, partition_epoch, (1, 2))


def test_kip101_scenario_1_restart_does_not_truncate_to_the_hw_and_m2_survives():
    # A (1) led epoch 0 and committed m1, m2 (HW 2). B (2) has both, but only learned HW 1.
    a_log = FakeLog()
    a_log.append(0, "m1")
    a_log.append(0, "m2")
    b_log = FakeLog()
    catch_up(b_log, a_log)

    # B restarts with its checkpointed HW 1. The seed's rule would truncate B to offset 1 here.
    b = PartitionReplica(TP, 2, high_watermark=1)
    # A dies at once; the controller elects B (in the ISR) for epoch 1.
    outcome = b.on_leader_and_isr(decision(2, 1), log=b_log, now_ms=0)
    assert outcome.change is ChangeKind.BECOME_LEADER
    b_log.assign_epoch(1)
    assert b_log.payloads() == ["m1", "m2"], "no truncation on restart or election"

    # A comes back as a follower of B and fetches with its last epoch: consistent, nothing lost.
    assert truncate_via_fetch(a_log, b_log) == 0
    assert truncate_via_offset_for_leader_epoch(a_log, b_log) == 1 and a_log.payloads() == ["m1", "m2"]
    read = b.on_follower_fetch(
        replica_id=1, current_leader_epoch=1, fetch_offset=2, last_fetched_epoch=0,
        replica_broker_epoch=101, now_ms=1, log=b_log
    )
    assert read.high_watermark == 2, "m2 is committed under the new leader too"


# --- KIP-101 scenario 2: replica divergence on restart after multiple hard failures --------


def test_kip101_scenario_2_divergent_tails_are_resolved_by_epoch():
    # A (1) led epoch 0: m1 replicated to B, m2 written on A only. Both lose power.
    a_log = FakeLog()
    a_log.append(0, "m1")
    b_log = FakeLog()
    catch_up(b_log, a_log)
    a_log.append(0, "m2")
    # B restarts first, is elected for epoch 1 and takes m3 at offset 1: same offset as A's m2.
    b_log.assign_epoch(1)
    b_log.append(1, "m3")
    # A restarts as a follower of B. Its HW (1 or 2) is irrelevant: the epochs decide.
    diverging = find_divergence(b_log, fetch_offset=a_log.log_end_offset, last_fetched_epoch=a_log.latest_epoch())
    assert diverging == EpochEndOffset(0, 1)
    assert on_diverging_epoch(a_log, last_fetched_epoch=0, diverging=diverging) == TruncateTo(1)
    assert truncate_via_fetch(a_log, b_log) == 1
    catch_up(a_log, b_log)
    assert a_log.payloads() == b_log.payloads() == ["m1", "m3"]
    assert a_log.epochs() == b_log.epochs() == [0, 1]


def test_kip101_scenario_2_via_offset_for_leader_epoch():
    a_log = FakeLog.with_epochs(0, 0)
    b_log = FakeLog.with_epochs(0, 1)
    assert truncate_via_offset_for_leader_epoch(a_log, b_log) == 1
    assert a_log.log_end_offset == 1
    catch_up(a_log, b_log)
    assert a_log.payloads() == b_log.payloads()
