"""PartitionReplica keeps PartitionState, LeaderReplica and the HW consistent across events."""

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import LEADER_EPOCH_JUMP_MAX, LEADER_EPOCH_MAX
from replog.broker.core.fetch.follower_fetch import FollowerRead
from replog.broker.core.isr.isr_answer import IsrCommitted
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer
from replog.broker.core.partition import Applied, LeaderAndIsrDecision, ReplicaRole
from replog.broker.core.produce.produce import ProduceAdmitted, ProduceWait, produce_completion
from replog.broker.core.replica import PartitionReplica

from tests.unit.broker.core.builders import TP
from tests.unit.broker.core.fake_log import FakeLog

INT32_MAX = (1 << 31) - 1


def decision(leader_id, leader_epoch, isr=(1, 2, 3), partition_epoch=0, replicas=(1, 2, 3)):
    return LeaderAndIsrDecision(TP, leader_id, leader_epoch, isr, partition_epoch, replicas)


def test_follower_hw_follows_the_leader_and_seeds_leadership():
    log = FakeLog.with_epochs(0, 0, 0, 0)
    replica = PartitionReplica(TP, 1, high_watermark=0)
    replica.on_leader_and_isr(decision(2, 0), log=log, now_ms=0)
    assert replica.on_fetch_response(leader_high_watermark=3, log=log) == 3
    assert replica.on_fetch_response(leader_high_watermark=9, log=log) == 4, "never past our LEO"
    assert replica.on_fetch_response(leader_high_watermark=2, log=log) == 4, "never backwards"
    replica.on_leader_and_isr(decision(1, 1), log=log, now_ms=0)
    assert replica.leader is not None and replica.high_watermark == 4


def test_checkpointed_hw_above_the_leo_is_clamped_on_leadership():
    log = FakeLog.with_epochs(0, 0)
    replica = PartitionReplica(TP, 1, high_watermark=7)
    replica.on_leader_and_isr(decision(1, 1), log=log, now_ms=0)
    assert replica.high_watermark == 2


def test_leaving_leadership_keeps_the_hw_and_refuses_leader_work():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(decision(1, 1, isr=(1,)), log=log, now_ms=0)
    log.assign_epoch(1)
    log.append(1, "a")
    replica.leader.on_local_append(log, appended_from=0, now_ms=0)
    replica.on_leader_and_isr(decision(2, 2, isr=(1, 2)), log=log, now_ms=0)
    assert replica.leader is None and replica.state.role is ReplicaRole.FOLLOWER and replica.high_watermark == 1
    admitted = replica.admit_produce(acks=1, min_insync_replicas=1)
    assert isinstance(admitted, Refusal) and admitted.code is ErrorCode.NOT_LEADER
    stale = replica.on_follower_fetch(replica_id=3, current_leader_epoch=1, fetch_offset=0, last_fetched_epoch=-1,
                                      replica_broker_epoch=103, now_ms=0, log=log)
    assert stale.code is ErrorCode.FENCED_LEADER_EPOCH
    same = replica.on_follower_fetch(replica_id=3, current_leader_epoch=2, fetch_offset=0, last_fetched_epoch=-1,
                                     replica_broker_epoch=103, now_ms=0, log=log)
    assert same.code is ErrorCode.NOT_LEADER
    assert replica.plan_consumer_fetch(current_leader_epoch=-1, fetch_offset=0, log=log).code is ErrorCode.NOT_LEADER


def test_accepted_alter_partition_updates_the_partition_state_too():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(decision(1, 1, partition_epoch=4), log=log, now_ms=0)
    log.assign_epoch(1)
    log.append(1, "a")
    proposal = replica.leader.maybe_shrink_isr(now_ms=10_000, replica_lag_time_max_ms=100, log=log)
    answer = AlterPartitionAnswer(ErrorCode.NONE, 1, 1, proposal.new_isr, 5)
    assert isinstance(replica.on_alter_partition_answer(proposal, answer, log=log), IsrCommitted)
    assert replica.state.isr == (1,) and replica.state.partition_epoch == 5
    # A delayed LeaderAndIsr carrying the older partition epoch cannot undo it.
    late = replica.on_leader_and_isr(decision(1, 1, partition_epoch=4), log=log, now_ms=0)
    assert isinstance(late, Refusal) and late.code is ErrorCode.INVALID_UPDATE_VERSION


def test_isr_update_reaches_the_leader_state():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(decision(1, 1, partition_epoch=0), log=log, now_ms=0)
    outcome = replica.on_leader_and_isr(decision(1, 1, isr=(1, 3), partition_epoch=1), log=log, now_ms=0)
    assert isinstance(outcome, Applied) and replica.leader.isr == (1, 3) and replica.leader.partition_epoch == 1
    assert replica.admit_produce(acks=-1, min_insync_replicas=2) == ProduceAdmitted(-1)
    assert replica.produce_progress().isr_size == 2


def test_leader_serves_follower_fetches_and_stop_drops_leadership():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(decision(1, 1), log=log, now_ms=0)
    read = replica.on_follower_fetch(replica_id=2, current_leader_epoch=1, fetch_offset=0, last_fetched_epoch=-1,
                                     replica_broker_epoch=102, now_ms=0, log=log)
    assert isinstance(read, FollowerRead)
    outcome = replica.on_stop_replica(leader_epoch=1, delete=False)
    assert isinstance(outcome, Applied) and replica.leader is None and replica.state.role is ReplicaRole.STOPPED


def test_truncation_clamps_the_follower_hw():
    log = FakeLog.with_epochs(0, 0, 0)
    replica = PartitionReplica(TP, 1, high_watermark=3)
    replica.on_leader_and_isr(decision(2, 1), log=log, now_ms=0)
    log.truncate_to(1)
    assert replica.on_truncated(log=log) == 1


def _parked_write(replica, log):
    """An acks=all write appended at the replica's current epoch, waiting for the HW."""
    epoch = replica.state.leader_epoch
    log.assign_epoch(epoch)
    log.append(epoch, "pending")
    replica.on_leader_append(log=log, appended_from=log.log_end_offset - 1, now_ms=0)
    offset = log.log_end_offset - 1
    return ProduceWait(TP, epoch, offset, offset, 2)


def _catch_up(replica, log, follower_id):
    result = replica.on_follower_fetch(replica_id=follower_id, current_leader_epoch=replica.state.leader_epoch,
                                       fetch_offset=log.log_end_offset, last_fetched_epoch=replica.state.leader_epoch,
                                       replica_broker_epoch=100 + follower_id, now_ms=0, log=log)
    assert isinstance(result, FollowerRead), result


def test_a_same_leader_epoch_bump_keeps_a_pending_write_waiting_until_the_hw_covers_it():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(decision(1, 1, isr=(1, 2)), log=log, now_ms=0)
    wait = _parked_write(replica, log)
    assert produce_completion(wait, replica.produce_progress()) is None
    # A reassignment raises the leader epoch and keeps broker 1 leading: the write is still in its log.
    replica.on_leader_and_isr(decision(1, 2, isr=(1, 2), partition_epoch=1), log=log, now_ms=0)
    assert produce_completion(wait, replica.produce_progress()) is None, "not NOT_LEADER: a retry would duplicate"
    log.assign_epoch(2)
    _catch_up(replica, log, 2)
    result = produce_completion(wait, replica.produce_progress())
    assert result is not None and result.error_code is ErrorCode.NONE and result.base_offset == wait.base_offset


def test_a_write_pending_across_a_spell_as_follower_fails_not_leader():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(decision(1, 1, isr=(1, 2)), log=log, now_ms=0)
    wait = _parked_write(replica, log)
    replica.on_leader_and_isr(decision(2, 2, isr=(1, 2), partition_epoch=1), log=log, now_ms=0)
    replica.on_leader_and_isr(decision(1, 3, isr=(1, 2), partition_epoch=2), log=log, now_ms=0)
    result = produce_completion(wait, replica.produce_progress())
    assert result is not None and result.error_code is ErrorCode.NOT_LEADER, "a follower may have truncated it"


def test_a_restarted_replica_measures_a_leader_epoch_jump_from_its_log():
    # Loaded from disk the replica holds no leader epoch yet, but its log says it saw epoch 7: a
    # decision naming 7 + LEADER_EPOCH_JUMP_MAX + 1 is not a real epoch and must not reach the epoch cache.
    log = FakeLog.with_epochs(3, 7)
    replica = PartitionReplica(TP, 1)
    wild = replica.on_leader_and_isr(decision(1, 7 + LEADER_EPOCH_JUMP_MAX + 1), log=log, now_ms=0)
    assert isinstance(wild, Refusal) and wild.code is ErrorCode.INVALID_REQUEST
    assert replica.state.role is ReplicaRole.NEW and replica.leader is None
    assert isinstance(replica.on_leader_and_isr(decision(1, 9), log=log, now_ms=0), Applied)


def test_a_leader_epoch_with_no_room_left_below_the_int32_limit_is_refused_even_by_a_new_replica():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    for wild in (INT32_MAX, LEADER_EPOCH_MAX + 1):
        refused = replica.on_leader_and_isr(decision(1, wild), log=log, now_ms=0)
        assert isinstance(refused, Refusal) and refused.code is ErrorCode.INVALID_REQUEST, wild
        assert "not a real leader epoch" in refused.reason
    assert replica.state.leader_epoch == -1
    assert isinstance(replica.on_leader_and_isr(decision(1, 0), log=log, now_ms=0), Applied)
