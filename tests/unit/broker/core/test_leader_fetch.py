"""The leader answering follower fetches: fencing, assignment, divergence, range, caught-up time."""

import pytest

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fetch.follower_fetch import DivergingEpoch, FollowerRead
from replog.broker.core.isr.follower_progress import FollowerProgress, after_fetch, is_out_of_sync
from replog.broker.core.log_view import EpochEndOffset

from tests.unit.broker.core.builders import append, fetch_as_prefix, start_leader
from tests.unit.broker.core.fake_log import FakeLog


def fetch(leader, log, *, replica_id=2, current_leader_epoch=None, fetch_offset=0, last_fetched_epoch=-1, now_ms=0):
    return leader.on_follower_fetch(
        replica_id=replica_id,
        current_leader_epoch=leader.leader_epoch if current_leader_epoch is None else current_leader_epoch,
        fetch_offset=fetch_offset,
        last_fetched_epoch=last_fetched_epoch,
        replica_broker_epoch=100 + replica_id, now_ms=now_ms,
        log=log,
    )


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"replica_id": 9}, ErrorCode.NOT_ASSIGNED_REPLICA),
        ({"replica_id": 1}, ErrorCode.INVALID_REQUEST),
        ({"current_leader_epoch": 4}, ErrorCode.FENCED_LEADER_EPOCH),
        ({"current_leader_epoch": 6}, ErrorCode.UNKNOWN_LEADER_EPOCH),
        ({"current_leader_epoch": -1}, ErrorCode.FENCED_LEADER_EPOCH),  # replicas may not skip the check
        ({"fetch_offset": 4}, ErrorCode.OFFSET_OUT_OF_RANGE),
    ],
)
def test_refused_fetches(kwargs, code):
    log = FakeLog.with_epochs(0, 0, 0)
    leader = start_leader(log, leader_epoch=5)
    result = fetch(leader, log, **kwargs)
    assert isinstance(result, Refusal) and result.code is code


def test_fetch_below_log_start_is_out_of_range():
    log = FakeLog(log_start_offset=10)
    leader = start_leader(log)
    result = fetch(leader, log, fetch_offset=3)
    assert isinstance(result, Refusal) and result.code is ErrorCode.OFFSET_OUT_OF_RANGE


def test_consistent_fetch_reads_up_to_the_leader_leo():
    log = FakeLog.with_epochs(0, 0, 1, 1)
    leader = start_leader(log, leader_epoch=2)
    result = fetch(leader, log, fetch_offset=2, last_fetched_epoch=0)
    assert isinstance(result, FollowerRead)
    assert (result.fetch_offset, result.read_upto_offset, result.leader_epoch) == (2, 4, 2)
    assert leader.follower_progress(2).log_end_offset == 2


def test_follower_with_a_longer_tail_in_an_old_epoch_diverges():
    # Leader: epoch 0 ended at offset 2. Follower: epoch-0 records up to offset 3.
    log = FakeLog.with_epochs(0, 0, 1, 1)
    leader = start_leader(log, leader_epoch=2)
    result = fetch(leader, log, fetch_offset=3, last_fetched_epoch=0)
    assert isinstance(result, DivergingEpoch) and result.diverging == EpochEndOffset(0, 2)
    assert leader.follower_progress(2).log_end_offset == -1, "a divergent fetch records nothing"


def test_follower_with_an_epoch_the_leader_never_had_diverges_to_the_epoch_below():
    log = FakeLog.with_epochs(0, 0, 3)
    leader = start_leader(log, leader_epoch=4)
    result = fetch(leader, log, fetch_offset=3, last_fetched_epoch=2)
    assert isinstance(result, DivergingEpoch) and result.diverging == EpochEndOffset(0, 2)


def test_follower_with_an_epoch_older_than_all_of_the_leaders_diverges_undefined():
    log = FakeLog.with_epochs(3, 3)
    leader = start_leader(log, leader_epoch=4)
    result = fetch(leader, log, fetch_offset=1, last_fetched_epoch=1)
    assert isinstance(result, DivergingEpoch) and result.diverging.is_undefined


def test_offset_for_leader_epoch_answers_and_fences():
    log = FakeLog.with_epochs(0, 0, 2, 2)
    leader = start_leader(log, leader_epoch=3)
    assert leader.offset_for_leader_epoch(current_leader_epoch=3, requested_leader_epoch=1, log=log) == EpochEndOffset(0, 2)
    assert leader.offset_for_leader_epoch(current_leader_epoch=3, requested_leader_epoch=2, log=log) == EpochEndOffset(2, 4)
    fenced = leader.offset_for_leader_epoch(current_leader_epoch=2, requested_leader_epoch=2, log=log)
    assert isinstance(fenced, Refusal) and fenced.code is ErrorCode.FENCED_LEADER_EPOCH


# --- the caught-up rule ---------------------------------------------------------------


def test_fetch_at_the_leader_leo_is_caught_up_now():
    progress = after_fetch(FollowerProgress(), fetch_offset=10, leader_log_end_offset=10, now_ms=500)
    assert progress.last_caught_up_ms == 500


def test_fetch_reaching_the_previous_leo_was_caught_up_at_the_previous_fetch():
    first = after_fetch(FollowerProgress(), fetch_offset=5, leader_log_end_offset=10, now_ms=100)
    assert first.last_caught_up_ms is None
    second = after_fetch(first, fetch_offset=10, leader_log_end_offset=14, now_ms=200)
    assert second.last_caught_up_ms == 100


def test_fetch_behind_the_previous_leo_proves_nothing():
    first = after_fetch(FollowerProgress(last_caught_up_ms=50), fetch_offset=5, leader_log_end_offset=10, now_ms=100)
    second = after_fetch(first, fetch_offset=9, leader_log_end_offset=14, now_ms=200)
    assert second.last_caught_up_ms == 50


def test_caught_up_time_never_moves_back():
    progress = FollowerProgress(log_end_offset=10, last_fetch_ms=100, leader_log_end_offset_at_last_fetch=10, last_caught_up_ms=300)
    assert after_fetch(progress, fetch_offset=10, leader_log_end_offset=12, now_ms=400).last_caught_up_ms == 300


def test_out_of_sync_after_the_lag_limit_unless_at_the_leader_leo():
    lagging = FollowerProgress(log_end_offset=7, last_caught_up_ms=0)
    assert not is_out_of_sync(lagging, leader_log_end_offset=9, now_ms=100, replica_lag_time_max_ms=100)
    assert is_out_of_sync(lagging, leader_log_end_offset=9, now_ms=101, replica_lag_time_max_ms=100)
    assert not is_out_of_sync(lagging, leader_log_end_offset=7, now_ms=10_000, replica_lag_time_max_ms=100)


def test_steady_follower_stays_caught_up_while_the_leader_appends():
    log = FakeLog()
    leader = start_leader(log)
    for step in range(1, 6):
        follower_leo = log.log_end_offset
        append(log, leader, 2)
        fetch_as_prefix(leader, log, 2, follower_leo, now_ms=step * 100)
    # Each fetch reached the LEO the leader had at the previous fetch.
    assert leader.follower_progress(2).last_caught_up_ms == 400
