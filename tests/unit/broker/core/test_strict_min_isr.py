"""Strict min ISR (KIP-966): a leader's HW does not move while its committed ISR is below min.insync.replicas,
so every committed record (acks=1 ones too) is on as many replicas as the eligible leader replicas vouch for."""

from replog.broker.core.errors import ErrorCode
from replog.broker.core.fetch.follower_fetch import FollowerRead
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.core.produce.produce import ProduceWait, produce_completion
from replog.broker.core.replica import PartitionReplica

from tests.unit.broker.core.builders import TP
from tests.unit.broker.core.fake_log import FakeLog


def decision(leader_epoch=1, isr=(1, 2, 3), partition_epoch=0, replicas=(1, 2, 3)):
    return LeaderAndIsrDecision(TP, 1, leader_epoch, isr, partition_epoch, replicas)


def leading(log, *, isr=(1, 2, 3), replicas=(1, 2, 3), min_insync_replicas=2, high_watermark=0):
    replica = PartitionReplica(TP, 1, high_watermark=high_watermark)
    replica.on_leader_and_isr(decision(isr=isr, replicas=replicas), log=log, now_ms=0,
                              min_insync_replicas=min_insync_replicas)
    log.assign_epoch(1)
    return replica


def write(replica, log, value="r"):
    log.append(1, value)
    return replica.on_leader_append(log=log, appended_from=log.log_end_offset - 1, now_ms=0)


def fetch_to_end(replica, log, follower_id):
    result = replica.on_follower_fetch(replica_id=follower_id, current_leader_epoch=1, fetch_offset=log.log_end_offset,
                                       last_fetched_epoch=1 if log.log_end_offset else -1,
                                       replica_broker_epoch=100 + follower_id, now_ms=0, log=log)
    assert isinstance(result, FollowerRead), result
    return result


def shrink_to(replica, log, isr, partition_epoch):
    """The controller's LeaderAndIsr at the leader's own epoch with a smaller ISR."""
    return replica.leader_and_isr_step(decision(isr=isr, partition_epoch=partition_epoch), log=log, now_ms=0,
                                       min_insync_replicas=2)


def test_the_hw_stops_while_the_isr_is_below_min_insync_replicas_and_moves_once_it_is_back():
    log = FakeLog()
    replica = leading(log)
    write(replica, log)
    fetch_to_end(replica, log, 2)
    fetch_to_end(replica, log, 3)
    assert replica.high_watermark == 1
    shrink_to(replica, log, (1,), partition_epoch=1)
    assert replica.leader.high_watermark_held
    write(replica, log)
    write(replica, log)
    assert replica.high_watermark == 1, "an acks=1 record on the leader alone is not committed"
    read = replica.plan_consumer_fetch(current_leader_epoch=1, fetch_offset=1, log=log)
    assert read.high_watermark == 1 and read.is_empty, "consumers do not see it either"
    # Follower 2 catches up and is proposed back; the HW waits for the controller's answer.
    result = fetch_to_end(replica, log, 2)
    assert result.isr_proposal is not None and replica.high_watermark == 1
    proposal = result.isr_proposal
    answer = AlterPartitionAnswer(ErrorCode.NONE, 1, 1, proposal.new_isr, proposal.partition_epoch + 1)
    replica.on_alter_partition_answer(proposal, answer, log=log)
    assert not replica.leader.high_watermark_held and replica.high_watermark == 3


def test_a_lone_leader_taking_over_does_not_commit_its_whole_log_below_min_insync_replicas():
    log = FakeLog.with_epochs(0, 0, 0)
    replica = leading(log, isr=(1,), min_insync_replicas=2)
    assert replica.high_watermark == 0
    lenient = leading(FakeLog.with_epochs(0, 0, 0), isr=(1,), min_insync_replicas=1)
    assert lenient.high_watermark == 3, "min.insync.replicas=1: Kafka's makeLeader rule as before"


def test_min_insync_replicas_above_the_replica_count_does_not_freeze_the_partition():
    log = FakeLog()
    replica = leading(log, isr=(1,), replicas=(1,), min_insync_replicas=3)
    assert write(replica, log).high_watermark_update.advanced and replica.high_watermark == 1


def test_lowering_min_insync_replicas_releases_a_held_hw_at_once_and_raising_it_holds_it():
    log = FakeLog()
    replica = leading(log, isr=(1, 2), min_insync_replicas=3)
    write(replica, log)
    fetch_to_end(replica, log, 2)
    assert replica.high_watermark == 0
    update, effects = replica.on_min_insync_replicas(2, log=log)
    assert update.advanced and replica.high_watermark == 1
    assert effects.hw_advanced and effects.completes_delayed_produces
    update, effects = replica.on_min_insync_replicas(3, log=log)
    assert not update.advanced and replica.leader.high_watermark_held
    assert effects.completes_delayed_produces, "waiting acks=all writes are judged again"


def test_a_follower_ignores_min_insync_replicas_changes():
    log = FakeLog()
    replica = PartitionReplica(TP, 1)
    replica.on_leader_and_isr(LeaderAndIsrDecision(TP, 2, 1, (1, 2), 0, (1, 2)), log=log, now_ms=0)
    update, effects = replica.on_min_insync_replicas(2, log=log)
    assert update is None and not effects.completes_delayed_produces


def test_an_acks_all_write_waiting_when_the_isr_falls_below_min_is_answered_at_once():
    log = FakeLog()
    replica = leading(log)
    write(replica, log)
    wait = ProduceWait(TP, 1, 0, 0, 2)
    assert produce_completion(wait, replica.produce_progress()) is None
    step = shrink_to(replica, log, (1,), partition_epoch=1)
    assert step.effects.completes_delayed_produces, "the purgatory looks at the partition again"
    result = produce_completion(wait, replica.produce_progress())
    assert result is not None and result.error_code is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
