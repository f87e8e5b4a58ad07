"""The controller's ZooKeeper writes are fenced by the /controller_epoch version
(KAFKA-6082): a controller whose seat was taken can write nothing."""

from __future__ import annotations

import pytest

from replog.common.core.partitions import TopicPartition
from replog.common.zk import schema
from replog.controller.adapters.zk_writer import SeatLostError, ZkWriter
from replog.controller.core import plan as p
from replog.controller.core.model import LeaderAndIsr

pytestmark = pytest.mark.integration


def test_a_writer_holding_an_old_epoch_version_writes_nothing(zk_client):
    kazoo = zk_client.kazoo
    kazoo.create(schema.CONTROLLER_EPOCH, b"1")
    _, stat = kazoo.get(schema.CONTROLLER_EPOCH)
    old = ZkWriter(zk_client, controller_id=1, controller_epoch=1, epoch_zk_version=stat.version)
    tp = TopicPartition("t", 0)
    kazoo.create(schema.topic_path("t"), schema.TopicAssignment({0: (1, 2)}).encode())
    old.write((p.CreatePartitionState(tp, LeaderAndIsr(1, 0, (1, 2), 1, 0)),))

    # Controller 2 takes the seat: the epoch znode's version moves on.
    stat = kazoo.set(schema.CONTROLLER_EPOCH, b"2", version=stat.version)
    new = ZkWriter(zk_client, controller_id=2, controller_epoch=2, epoch_zk_version=stat.version)

    stale_write = p.SetPartitionState(tp, LeaderAndIsr(2, 1, (2,), 1, 1), expected_partition_epoch=0)
    with pytest.raises(SeatLostError):
        old.write((stale_write,))
    data, state_stat = kazoo.get(schema.partition_state_path("t", 0))
    assert schema.PartitionStateRecord.decode(data).leader == 1 and state_stat.version == 0

    new.write((p.SetPartitionState(tp, LeaderAndIsr(2, 1, (2, 1), 2, 1), expected_partition_epoch=0),))
    data, state_stat = kazoo.get(schema.partition_state_path("t", 0))
    assert schema.PartitionStateRecord.decode(data) == schema.PartitionStateRecord(2, 1, (2, 1), 2)
    assert state_stat.version == 1


def test_many_partitions_are_written_in_bounded_batches_all_fenced(zk_client):
    kazoo = zk_client.kazoo
    kazoo.create(schema.CONTROLLER_EPOCH, b"1")
    _, stat = kazoo.get(schema.CONTROLLER_EPOCH)
    writer = ZkWriter(zk_client, controller_id=1, controller_epoch=1, epoch_zk_version=stat.version)
    kazoo.create(schema.topic_path("big"), schema.TopicAssignment({i: (1,) for i in range(2500)}).encode())
    creates = tuple(p.CreatePartitionState(TopicPartition("big", i), LeaderAndIsr(1, 0, (1,), 1, 0))
                    for i in range(2500))
    stats = writer.write(creates)
    assert stats.transactions >= 3  # 2,500 partitions x 2 znodes each do not fit one bounded multi
    assert len(kazoo.get_children(schema.partitions_path("big"))) == 2500
