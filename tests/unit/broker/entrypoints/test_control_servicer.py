"""The controller's requests at the broker's edge: what the answers list."""

from __future__ import annotations

import logging

import grpc
import pytest

from replog.broker.control.controller_fence import ControllerFence, EpochUnconfirmed
from replog.broker.control.state_changes import PartitionResult
from replog.broker.core.errors import ErrorCode
from replog.broker.entrypoints.control_servicer import BrokerControlServicer
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.common.core.partitions import TopicPartition
from replog.common.refusal_log import RefusalLog
from replog.v1 import broker_control_pb2

REFUSED = TopicPartition("orders", 7)


class FakeStateChanges:
    """Applies every partition but one, as ReplicaStateChanges would answer a stale leader epoch."""

    def leader_and_isr(self, decisions, *, init, parent):
        return [PartitionResult(d.topic_partition, ErrorCode.FENCED_LEADER_EPOCH if d.topic_partition == REFUSED
                                else ErrorCode.NONE, "stale" if d.topic_partition == REFUSED else "")
                for d in decisions]

    def stop_replicas(self, requests):
        return [PartitionResult(r.topic_partition, ErrorCode.NONE) for r in requests]


class Aborted(Exception):
    pass


class Context:
    def invocation_metadata(self):
        return ()

    def abort(self, code, details):
        raise Aborted(code, details)

    def peer(self):
        return "ipv4:127.0.0.1:5555"


def servicer(read_controller_epoch=lambda: 1) -> BrokerControlServicer:
    return BrokerControlServicer(state_changes=FakeStateChanges(), metadata=MetadataCache(), broker_epoch_of=lambda: 1,
                                 fence=ControllerFence(read_controller_epoch),
                                 refusals=RefusalLog(logging.getLogger("t"), lambda: 0.0))


def test_leader_and_isr_lists_only_the_partitions_it_did_not_apply():
    request = broker_control_pb2.LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=1, partitions=[
        broker_control_pb2.PartitionState(topic="orders", partition=p, leader=1, leader_epoch=3, isr=[1, 2],
                                          partition_epoch=3, replicas=[1, 2]) for p in range(10)])
    reply = servicer().LeaderAndIsr(request, Context())
    assert reply.error_code == ErrorCode.NONE
    assert [(e.topic, e.partition, e.error_code, e.error_message) for e in reply.partitions] == [
        ("orders", 7, ErrorCode.FENCED_LEADER_EPOCH, "stale")]


def test_stop_replica_that_stopped_everything_lists_nothing():
    request = broker_control_pb2.StopReplicaRequest(controller_id=1, controller_epoch=1, broker_epoch=1, partitions=[
        broker_control_pb2.StopReplicaPartition(topic="orders", partition=p, leader_epoch=4, delete=True)
        for p in range(3)])
    reply = servicer().StopReplica(request, Context())
    assert reply.error_code == ErrorCode.NONE and not reply.partitions


def test_a_request_without_the_registrations_broker_epoch_is_refused_whole():
    for broker_epoch in (0, -5):
        request = broker_control_pb2.StopReplicaRequest(controller_id=1, controller_epoch=1, broker_epoch=broker_epoch,
                                                        partitions=[broker_control_pb2.StopReplicaPartition(
                                                            topic="orders", partition=0, leader_epoch=4, delete=True)])
        reply = servicer().StopReplica(request, Context())
        assert reply.error_code == ErrorCode.STALE_BROKER_EPOCH and not reply.partitions


def test_update_metadata_carries_no_broker_epoch_and_is_judged_by_the_controller_epoch_alone():
    reply = servicer().UpdateMetadata(broker_control_pb2.UpdateMetadataRequest(controller_id=1, controller_epoch=1),
                                      Context())
    assert reply.error_code == ErrorCode.NONE


def test_an_unconfirmed_controller_epoch_is_refused_and_an_unreadable_zookeeper_is_unavailable():
    request = broker_control_pb2.LeaderAndIsrRequest(controller_id=9, controller_epoch=2147483647, init=True)
    reply = servicer().LeaderAndIsr(request, Context())
    assert reply.error_code == ErrorCode.STALE_CONTROLLER_EPOCH

    def unreadable() -> int:
        raise EpochUnconfirmed("ZooKeeper is down")

    with pytest.raises(Aborted) as aborted:
        servicer(unreadable).LeaderAndIsr(request, Context())
    assert aborted.value.args[0] == grpc.StatusCode.UNAVAILABLE and "try again" in aborted.value.args[1]
