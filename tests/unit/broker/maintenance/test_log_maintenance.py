"""DeleteRecords on a leader, a follower taking its leader's log start, retention in bounded rounds:
the steps over real partition logs, in one process."""

from __future__ import annotations

import logging

from replog.broker.core.delete_records import delete_records_offset
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.log import LogConfig
from replog.broker.replicas.follower_side import append_from_leader, fetch_position
from replog.broker.replicas.leader_side import read_for_follower
from replog.broker.maintenance.log_maintenance import delete_records, update_log_config
from replog.broker.maintenance.retention_rounds import RetentionRounds
from replog.common.clock import ManualClock

from ..replicas.test_replication_steps import decide, hosted, produce


def follow_once(leader, follower, leader_epoch: int) -> bool:
    """One ReplicaFetch round trip; True when the follower took a newer log start."""
    position = fetch_position(follower, leader_epoch=leader_epoch)
    answer = read_for_follower(leader, replica_id=follower.broker_id, current_leader_epoch=leader_epoch,
                               fetch_offset=position.fetch_offset, last_fetched_epoch=position.last_fetched_epoch,
                               replica_broker_epoch=100 + follower.broker_id, bytes_max=1 << 20, now_ms=0)
    appended = append_from_leader(follower, leader_epoch=leader_epoch, fetch_offset=position.fetch_offset,
                                  records=answer.records, leader_high_watermark=answer.high_watermark,
                                  leader_log_start_offset=answer.log_start_offset)
    return appended.log_start_moved


def test_the_delete_records_offset_rule():
    assert delete_records_offset(is_leader=True, requested_offset=-1, high_watermark=9) == 9
    assert delete_records_offset(is_leader=True, requested_offset=4, high_watermark=9) == 4
    above = delete_records_offset(is_leader=True, requested_offset=10, high_watermark=9)
    assert isinstance(above, Refusal) and above.code is ErrorCode.OFFSET_OUT_OF_RANGE and "9" in above.reason
    negative = delete_records_offset(is_leader=True, requested_offset=-2, high_watermark=9)
    assert isinstance(negative, Refusal) and "negative" in negative.reason
    assert delete_records_offset(is_leader=False, requested_offset=1, high_watermark=9).code is ErrorCode.NOT_LEADER


def test_delete_records_moves_the_leaders_start_and_the_follower_takes_it(tmp_path):
    clock = ManualClock()
    leader, follower = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(leader, 1, 1)
    decide(follower, 1, 1)
    for _ in range(5):
        produce(leader, [b"a", b"b"])
    for _ in range(3):
        follow_once(leader, follower, 1)
    assert leader.replica.high_watermark == 10
    refused = delete_records(leader, 11)
    assert isinstance(refused, Refusal) and leader.log.log_start_offset == 0
    assert delete_records(leader, 6) == 6
    assert delete_records(leader, 2) == 6  # never lowered; answers the start in force
    assert isinstance(delete_records(follower, 6), Refusal)  # only the leader takes DeleteRecords
    assert follow_once(leader, follower, 1)
    assert follower.log.log_start_offset == 6
    assert not follow_once(leader, follower, 1)  # nothing new the next time


def led_replicas_over_their_retention(tmp_path, clock, count: int) -> list:
    """`count` partitions led here alone, each with rolled segments that retention.bytes=1 lets go."""
    replicas = []
    for index in range(count):
        replica = hosted(tmp_path / f"partition-{index}", 1, clock)
        decide(replica, 1, 1, isr=(1,))
        update_log_config(replica, LogConfig(segment_bytes=200, retention_bytes=1))
        for _ in range(6):
            produce(replica, [b"x" * 40])
        replicas.append(replica)
    return replicas


def test_retention_runs_in_slices_of_bounded_size(tmp_path):
    clock = ManualClock()
    replicas = led_replicas_over_their_retention(tmp_path, clock, 5)
    rounds = RetentionRounds(lambda: list(replicas), clock, check_interval_ms=1000, partitions_per_round_max=2)
    rounds()
    assert all(r.log.log_start_offset == 0 for r in replicas)  # the first pass begins after one interval
    clock.advance(1000)
    rounds()
    assert [r.log.log_start_offset > 0 for r in replicas] == [True, True, False, False, False]
    rounds()
    rounds()
    assert all(r.log.log_start_offset > 0 for r in replicas)
    starts = [r.log.log_start_offset for r in replicas]
    rounds()  # the pass is over: nothing until the next interval
    assert [r.log.log_start_offset for r in replicas] == starts and rounds.segments_deleted > 0


def test_a_round_that_deleted_logs_one_line_for_all_its_partitions(tmp_path, caplog):
    # a line per partition was 10,000 lines a pass, on each replica of a 10,000-partition topic
    clock = ManualClock()
    replicas = led_replicas_over_their_retention(tmp_path, clock, 3)
    rounds = RetentionRounds(lambda: list(replicas), clock, check_interval_ms=1000, partitions_per_round_max=10)
    caplog.set_level(logging.INFO)
    clock.advance(1000)
    rounds()
    assert all(r.log.log_start_offset > 0 for r in replicas)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1 and f"retention deleted {rounds.segments_deleted} segment(s) of 3 partition(s)" in lines[0]
