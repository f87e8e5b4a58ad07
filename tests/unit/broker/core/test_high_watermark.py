"""High watermark: the pure rule, and its laws over random fetch schedules (Hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.broker.core.isr.high_watermark import high_watermark_candidate, next_high_watermark
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer
from replog.broker.core.errors import ErrorCode

from tests.unit.broker.core.builders import append, fetch_as_prefix, start_leader
from tests.unit.broker.core.fake_log import FakeLog

# --- the pure functions ------------------------------------------------------------


def test_candidate_is_the_minimum_over_the_isr_only():
    assert high_watermark_candidate({1, 2}, {1: 10, 2: 7, 3: 1}) == 7


def test_unknown_member_blocks_the_candidate():
    assert high_watermark_candidate({1, 2}, {1: 10}) == -1


def test_hw_never_goes_back():
    assert next_high_watermark(current=8, candidate=5, epoch_start_offset=0) == 8


def test_hw_waits_for_the_current_epoch_start():
    assert next_high_watermark(current=3, candidate=6, epoch_start_offset=7) == 3
    assert next_high_watermark(current=3, candidate=7, epoch_start_offset=7) == 7


@given(st.dictionaries(st.integers(0, 5), st.integers(-1, 1000), min_size=1))
def test_candidate_is_at_most_every_member_and_equal_to_one(log_end_offsets):
    isr = set(log_end_offsets)
    candidate = high_watermark_candidate(isr, log_end_offsets)
    assert all(candidate <= leo for leo in log_end_offsets.values())
    assert candidate in log_end_offsets.values()


# --- the leader, with a fixed ISR ---------------------------------------------------


def test_hw_advances_to_the_slowest_isr_member():
    log = FakeLog.with_epochs(0, 0)
    leader = start_leader(log, high_watermark=2)
    append(log, leader, 3)  # LEO 5
    fetch_as_prefix(leader, log, 2, 5, now_ms=1)
    assert leader.high_watermark == 2  # follower 3 not heard from in this epoch
    read = fetch_as_prefix(leader, log, 3, 4, now_ms=1)
    assert leader.high_watermark == 4 and read.high_watermark_update.advanced


def test_alone_in_the_isr_the_leader_commits_on_append():
    log = FakeLog()
    leader = start_leader(log, isr=(1,))
    log.append(1, "a")
    update = leader.on_local_append(log, appended_from=0, now_ms=0)
    assert (update.previous, update.current) == (0, 1)


def test_a_leader_alone_in_its_isr_commits_its_whole_log_as_it_takes_over():
    # Elected with only itself in the ISR and records past its HW (replicated from the old leader,
    # not yet known committed), a leader that waited for an append or a fetch to count them would
    # hold a producer's retries of exactly those records -- duplicates, so no append -- until a
    # follower came back (the fault matrix's kill-9-leader cell, seen at 5.1 s).
    log = FakeLog.with_epochs(0, 0, 0, 0)  # LEO 4
    leader = start_leader(log, isr=(1,), high_watermark=1)
    assert leader.high_watermark == 4 and leader.high_watermark_settled


def test_a_leader_with_followers_in_its_isr_keeps_the_inherited_hw_as_it_takes_over():
    log = FakeLog.with_epochs(0, 0, 0, 0)
    leader = start_leader(log, isr=(1, 2), high_watermark=1)
    assert leader.high_watermark == 1  # follower 2 not heard from in this epoch


def test_new_leader_keeps_inherited_hw_until_followers_pass_its_epoch_start():
    log = FakeLog.with_epochs(0, 0, 0, 0)  # LEO 4; the old leader had published HW 4
    leader = start_leader(log, high_watermark=1)  # we only knew HW 1 as a follower
    fetch_as_prefix(leader, log, 2, 3, now_ms=1)
    fetch_as_prefix(leader, log, 3, 3, now_ms=1)
    assert leader.high_watermark == 1 and not leader.high_watermark_settled  # 3 < epoch start 4
    fetch_as_prefix(leader, log, 2, 4, now_ms=2)
    fetch_as_prefix(leader, log, 3, 4, now_ms=2)
    assert leader.high_watermark == 4 and leader.high_watermark_settled


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fixed_isr_hw_is_monotonic_below_every_member_and_equals_the_minimum(data):
    initial_epochs = data.draw(st.lists(st.integers(0, 2), max_size=6).map(sorted))
    log = FakeLog.with_epochs(*initial_epochs)
    inherited_hw = data.draw(st.integers(0, log.log_end_offset))
    leader = start_leader(log, leader_epoch=3, high_watermark=inherited_hw)
    epoch_start = leader.epoch_start_offset
    follower_leo = {2: None, 3: None}
    previous_hw = leader.high_watermark
    for _ in range(data.draw(st.integers(1, 25))):
        if data.draw(st.booleans()):
            append(log, leader, data.draw(st.integers(1, 3)))
        else:
            replica_id = data.draw(st.sampled_from([2, 3]))
            # ISR members hold at least every HW already published (the inherited one included).
            low = follower_leo[replica_id] if follower_leo[replica_id] is not None else inherited_hw
            follower_leo[replica_id] = data.draw(st.integers(low, log.log_end_offset))
            fetch_as_prefix(leader, log, replica_id, follower_leo[replica_id], now_ms=0)
        hw = leader.high_watermark
        assert hw >= previous_hw, "HW is monotonic"
        previous_hw = hw
        known = [leo for leo in follower_leo.values() if leo is not None]
        assert all(hw <= leo for leo in known) and hw <= log.log_end_offset, "HW <= every ISR LEO"
        if len(known) == 2:
            minimum = min(known + [log.log_end_offset])
            assert hw == (minimum if minimum >= epoch_start else inherited_hw), "HW = min over a fixed ISR"


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_changing_isr_hw_stays_monotonic_and_below_the_maximal_isr(data):
    log = FakeLog()
    leader = start_leader(log, leader_epoch=1)
    follower_leo = {2: 0, 3: 0}
    now_ms = 0
    partition_epoch = 0
    previous_hw = 0
    for _ in range(data.draw(st.integers(1, 40))):
        action = data.draw(st.sampled_from(["append", "fetch", "tick", "shrink", "answer_ok", "answer_refused", "lost"]))
        if action == "append":
            append(log, leader, data.draw(st.integers(1, 3)))
        elif action == "fetch":
            replica_id = data.draw(st.sampled_from([2, 3]))
            follower_leo[replica_id] = data.draw(st.integers(follower_leo[replica_id], log.log_end_offset))
            fetch_as_prefix(leader, log, replica_id, follower_leo[replica_id], now_ms=now_ms)
        elif action == "tick":
            now_ms += data.draw(st.integers(1, 200))
        elif action == "shrink":
            leader.maybe_shrink_isr(now_ms=now_ms, replica_lag_time_max_ms=100, log=log)
        elif leader.pending_proposal is not None and action != "lost":  # a lost answer changes nothing
            proposal = leader.pending_proposal
            if action == "answer_ok":
                partition_epoch += 1
                answer = AlterPartitionAnswer(ErrorCode.NONE, 1, 1, proposal.new_isr, partition_epoch)
            else:
                answer = AlterPartitionAnswer(ErrorCode.INELIGIBLE_REPLICA, 1, 1, leader.isr, partition_epoch)
            leader.on_alter_partition_answer(proposal, answer, log)
        hw = leader.high_watermark
        assert hw >= previous_hw
        previous_hw = hw
        assert 1 in leader.isr
        for member in leader.maximal_isr - {1}:
            assert hw <= follower_leo[member], (member, hw, follower_leo)
