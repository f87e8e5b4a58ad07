"""Small builders shared by the broker-core unit tests."""

from __future__ import annotations

from replog.broker.core.fetch.follower_fetch import FollowerRead
from replog.broker.core.leader import LeaderReplica
from replog.common.core.partitions import TopicPartition
from tests.unit.broker.core.fake_log import FakeLog

TP = TopicPartition("orders", 0)
LEADER_ID = 1


def start_leader(
    log: FakeLog,
    *,
    leader_epoch: int = 1,
    replicas: tuple[int, ...] = (1, 2, 3),
    isr: tuple[int, ...] = (1, 2, 3),
    partition_epoch: int = 0,
    high_watermark: int = 0,
    now_ms: int = 0,
) -> LeaderReplica:
    """Broker 1 takes leadership at `leader_epoch` (the adapter's AssignLeaderEpochStart applied)."""
    log.assign_epoch(leader_epoch)
    return LeaderReplica.start(
        topic_partition=TP,
        broker_id=LEADER_ID,
        leader_epoch=leader_epoch,
        replicas=replicas,
        isr=isr,
        partition_epoch=partition_epoch,
        high_watermark=high_watermark,
        log=log,
        now_ms=now_ms,
    )


def fetch_as_prefix(leader: LeaderReplica, log: FakeLog, replica_id: int, fetch_offset: int, now_ms: int,
                    broker_epoch: int | None = None) -> FollowerRead:
    """A fetch from a follower whose log is the leader's prefix up to `fetch_offset`; the follower names
    `broker_epoch` as its registration (by default 100 + its id)."""
    last_epoch = log.record_at(fetch_offset - 1).leader_epoch if fetch_offset > log.log_start_offset else -1
    result = leader.on_follower_fetch(
        replica_id=replica_id,
        current_leader_epoch=leader.leader_epoch,
        fetch_offset=fetch_offset,
        last_fetched_epoch=last_epoch,
        replica_broker_epoch=100 + replica_id if broker_epoch is None else broker_epoch, now_ms=now_ms,
        log=log,
    )
    assert isinstance(result, FollowerRead), result
    return result


def append(log: FakeLog, leader: LeaderReplica, count: int = 1, now_ms: int = 0) -> None:
    appended_from = log.log_end_offset
    for _ in range(count):
        log.append(leader.leader_epoch, f"r{log.log_end_offset}")
    leader.on_local_append(log, appended_from=appended_from, now_ms=now_ms)
