"""An AlterPartition without the leader's broker epoch cannot put a lagging replica into the ISR.

Broker 3 is paused (its ZooKeeper session outlives the pause, so it stays registered) and falls out
of the ISR; records are written without it. A request in the leader's name (its own certificate),
but with broker epoch 0, proposes the old ISR again. It is refused with STALE_BROKER_EPOCH and
ZooKeeper keeps the ISR without broker 3: had it been written, a clean election could later pick
broker 3, which lacks the records, while the leader's own view left it out and never waited for it.
(Before 160d8a3 an epoch of 0 meant "not given" and skipped the check.)

First, the same proposal with the leader's own broker epoch, but naming broker 3 under another
registration than its current one (as a resent proposal would after broker 3 restarted since the fetch
that caught it up), is refused with INELIGIBLE_REPLICA (KIP-903): the controller checks a joining
member's epoch against /brokers/ids/3, through the real servicer and wire format. It goes first, since
the test must end before broker 3's session does (the server caps sessions at 10 s).
"""

from __future__ import annotations

import signal

import pytest

from replog.common.security.principal import Principal
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    partition_state,
    produce_raw,
    wait_for_isr,
    zk_session,
)
from tests.integration.tls_helpers import channel_as

pytestmark = pytest.mark.fault

TOPIC = "fenced-isr"
LAG_MS = 2000


def test_an_alter_partition_with_broker_epoch_zero_cannot_grow_the_isr(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=30_000,
                                          extra_args={"broker": ["--replica-lag-time-max-ms", str(LAG_MS)]}))
    try:
        with zk_session(cluster) as zk:
            create_topic(zk, TOPIC, {0: (1, 2, 3)})
            wait_for_isr(cluster, zk, TOPIC, {1, 2, 3}, 30)
            epochs = {b: zk.get(schema.broker_path(b))[1].czxid for b in (1, 2, 3)}
            cluster.signal("broker-3", signal.SIGSTOP)
            for i in range(3):  # records broker 3 will not have
                assert produce_raw(cluster, 1, TOPIC, batch_of([b"r%d" % i])).error_code in (
                    common_pb2.ERROR_CODE_NONE, common_pb2.ERROR_CODE_REQUEST_TIMED_OUT)
            wait_for_isr(cluster, zk, TOPIC, {1, 2}, 20)
            state = partition_state(zk, TOPIC)
            _, stat = zk.get(schema.partition_state_path(TOPIC, 0))
            item = controller_pb2.AlterPartitionItem(
                topic=TOPIC, partition=0, leader_epoch=state.leader_epoch, new_isr=[1, 2, 3],
                partition_epoch=stat.version, new_isr_broker_epochs=[epochs[1], epochs[2], epochs[3] - 1])
            request = controller_pb2.AlterPartitionRequest(broker_id=1, broker_epoch=epochs[1], partitions=[item])
            with channel_as(cluster, Principal("broker", "1"), cluster.processes["controller-1"].address) as channel:
                reply = controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(request, timeout=10)
            assert reply.error_code == common_pb2.ERROR_CODE_NONE, reply
            (result,) = reply.partitions
            assert result.error_code == common_pb2.ERROR_CODE_INELIGIBLE_REPLICA, result
            assert f"now registered with epoch {epochs[3]}" in result.error_message, result
            assert set(partition_state(zk, TOPIC).isr) == {1, 2}
            request = controller_pb2.AlterPartitionRequest(broker_id=1, broker_epoch=0, partitions=[
                controller_pb2.AlterPartitionItem(topic=TOPIC, partition=0, leader_epoch=state.leader_epoch,
                                                  new_isr=[1, 2, 3], partition_epoch=stat.version)])
            with channel_as(cluster, Principal("broker", "1"), cluster.processes["controller-1"].address) as channel:
                reply = controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(request, timeout=10)
            assert reply.error_code == common_pb2.ERROR_CODE_STALE_BROKER_EPOCH, reply
            assert set(partition_state(zk, TOPIC).isr) == {1, 2}
    finally:
        cluster.signal("broker-3", signal.SIGCONT)
        cluster.discard()
