"""A caller that may reach a broker's BrokerControlService, but is confused or malicious, cannot move
a fence or exhaust the broker: a controller epoch no controller holds is refused and the real
controller is still obeyed; a wild leader epoch is refused and the replica keeps its own; a stop at
a bogus epoch deletes nothing; requests naming too many partitions, or too large to receive, are
refused and the broker goes on serving. Each refusal is logged once, with the caller."""

from __future__ import annotations

import grpc
import pytest

from replog.broker.config import BrokerConfig, request_bytes_max
from replog.broker.core.fencing import LEADER_EPOCH_JUMP_MAX
from replog.common.security.principal import Principal
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import broker_control_pb2, common_pb2, log_pb2, replication_pb2, replication_pb2_grpc

from .broker_helpers import (
    batch_of,
    broker_name,
    control_stub,
    create_topic,
    describe,
    log_stub,
    produce_raw,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)
from .tls_helpers import channel_as

pytestmark = pytest.mark.integration

E = common_pb2
PARTITIONS_MAX = 1000
RECEIVE_BYTES_MAX = request_bytes_max(BrokerConfig(request_partitions_max=PARTITIONS_MAX))
INT32_MAX = (1 << 31) - 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("control-plane-hardening"))
    cluster = factory(ClusterSpec(controllers=1, gateways=0,
                                  extra_args={"broker": ["--request-partitions-max", str(PARTITIONS_MAX)]}))
    with zk_session(cluster) as zk:
        create_topic(zk, "held", {0: (1, 2)})
        wait_for_leader(cluster, zk, "held", 1, 30, followers=(2,))
        wait_for_isr(cluster, zk, "held", {1, 2}, 30)
    assert produce_raw(cluster, 1, "held", batch_of([b"kept-1", b"kept-2"])).error_code == E.ERROR_CODE_NONE
    yield cluster
    factory.teardown()


def real_epochs(cluster, broker_id: int) -> dict[str, int]:
    """The controller epoch and the broker's registration epoch, as the seated controller would send them."""
    with zk_session(cluster) as zk:
        return {"controller_epoch": schema.decode_controller_epoch(zk.get(schema.CONTROLLER_EPOCH)[0]),
                "broker_epoch": zk.get(schema.broker_path(broker_id))[1].czxid}


def held_replica(cluster, broker_id: int = 1) -> tuple[bool, int, int, int]:
    """What a user would notice of broker `broker_id`'s replica of `held`: leading, leader epoch, end, size."""
    replica = describe(cluster, broker_id, "held")
    assert replica is not None, f"broker {broker_id} no longer hosts held-0"
    return replica.leader, replica.leader_epoch, replica.log_end_offset, replica.size_bytes


def refusal_lines(cluster, method: str, reason: str) -> list[str]:
    text = cluster.log_path(broker_name(1)).read_text(errors="replace")
    return [line for line in text.splitlines() if f"refused {method} from ipv4:127.0.0.1:" in line and reason in line]


def test_a_controller_epoch_jump_is_refused_and_the_real_controller_is_still_obeyed(cluster):
    before = held_replica(cluster)
    stub = control_stub(cluster, 1)
    # The attack of the brief: an INIT with no partitions would also have deleted every replica.
    for _ in range(20):
        reply = stub.LeaderAndIsr(broker_control_pb2.LeaderAndIsrRequest(
            controller_id=9, controller_epoch=INT32_MAX, init=True, partitions=[]), timeout=10)
        assert reply.error_code == E.ERROR_CODE_STALE_CONTROLLER_EPOCH
        assert "no controller has held it" in reply.error_message
    assert held_replica(cluster) == before
    # Logged once with the caller, however often it came.
    assert len(refusal_lines(cluster, "LeaderAndIsr", "STALE_CONTROLLER_EPOCH")) == 1

    with zk_session(cluster) as zk:
        create_topic(zk, "after-attack", {0: (1, 2)})
        wait_for_leader(cluster, zk, "after-attack", 1, 30, followers=(2,))
    answer = produce_raw(cluster, 1, "after-attack", batch_of([b"still obeyed"]))
    assert answer.error_code == E.ERROR_CODE_NONE, answer


def test_a_huge_leader_epoch_is_refused_and_the_replica_keeps_its_epoch(cluster):
    before = held_replica(cluster)
    leading, leader_epoch = before[0], before[1]
    assert leading
    for wild in (leader_epoch + LEADER_EPOCH_JUMP_MAX + 1, INT32_MAX):
        reply = control_stub(cluster, 1).LeaderAndIsr(broker_control_pb2.LeaderAndIsrRequest(
            controller_id=9, **real_epochs(cluster, 1), partitions=[
                broker_control_pb2.PartitionState(topic="held", partition=0, leader=2, leader_epoch=wild, isr=[1, 2],
                                                  partition_epoch=INT32_MAX, replicas=[1, 2])]), timeout=10)
        assert reply.error_code == E.ERROR_CODE_NONE
        assert [(p.topic, p.error_code) for p in reply.partitions] == [("held", E.ERROR_CODE_INVALID_REQUEST)]
        assert "not a real leader epoch" in reply.partitions[0].error_message
    assert held_replica(cluster) == before
    assert produce_raw(cluster, 1, "held", batch_of([b"still leading"])).error_code == E.ERROR_CODE_NONE


def test_a_stop_replica_delete_at_a_bogus_epoch_deletes_nothing(cluster):
    before = held_replica(cluster, 2)
    leader_epoch = before[1]
    bogus = [-1, leader_epoch + LEADER_EPOCH_JUMP_MAX + 1, INT32_MAX] + ([leader_epoch - 1] if leader_epoch else [])
    reply = control_stub(cluster, 2).StopReplica(broker_control_pb2.StopReplicaRequest(
        controller_id=9, **real_epochs(cluster, 2), partitions=[
            broker_control_pb2.StopReplicaPartition(topic="held", partition=0, leader_epoch=epoch, delete=True)
            for epoch in bogus]), timeout=10)
    assert reply.error_code == E.ERROR_CODE_NONE
    assert len(reply.partitions) == len(bogus)
    assert all(p.error_code != E.ERROR_CODE_NONE for p in reply.partitions), reply
    # Without the registration's broker epoch the whole request is refused.
    epochs = real_epochs(cluster, 2)
    anonymous = control_stub(cluster, 2).StopReplica(broker_control_pb2.StopReplicaRequest(
        controller_id=9, controller_epoch=epochs["controller_epoch"], partitions=[
            broker_control_pb2.StopReplicaPartition(topic="held", partition=0, leader_epoch=leader_epoch,
                                                    delete=True)]), timeout=10)
    assert anonymous.error_code == E.ERROR_CODE_STALE_BROKER_EPOCH and not anonymous.partitions
    assert held_replica(cluster, 2) == before
    # The follower still replicates: a new record reaches it.
    end = held_replica(cluster)[2]
    assert produce_raw(cluster, 1, "held", batch_of([b"replicated"])).error_code == E.ERROR_CODE_NONE
    wait_for(lambda: held_replica(cluster, 2)[2] == end + 1, 10, "broker 2 to replicate the new record")


def test_requests_over_the_partition_bound_are_refused_with_invalid_argument(cluster):
    over = PARTITIONS_MAX + 1
    fetch = log_pb2.FetchRequest(max_wait_ms=0, partitions=[
        log_pb2.FetchPartition(topic="held", partition=p, fetch_offset=0, current_leader_epoch=-1)
        for p in range(over)])
    with pytest.raises(grpc.RpcError) as refused:
        log_stub(cluster, 1).Fetch(fetch, timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"names {over} partitions" in refused.value.details()
    assert "request_partitions_max" in refused.value.details()

    leader_and_isr = broker_control_pb2.LeaderAndIsrRequest(
        controller_id=9, **real_epochs(cluster, 1), partitions=[
            broker_control_pb2.PartitionState(topic="held", partition=p, leader=1, leader_epoch=0, isr=[1],
                                              partition_epoch=0, replicas=[1]) for p in range(over)])
    with pytest.raises(grpc.RpcError) as refused:
        control_stub(cluster, 1).LeaderAndIsr(leader_and_isr, timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    # On a stream: the first request within the bound is answered, the one over it ends the stream.
    def fetches():
        for count in (1, over):
            yield replication_pb2.ReplicaFetchStreamRequest(fetch=replication_pb2.ReplicaFetchRequest(
                replica_id=3, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, partitions=[
                    replication_pb2.ReplicaFetchPartition(topic="held", partition=p, fetch_offset=0,
                                                          last_fetched_epoch=-1) for p in range(count)]))

    stub = replication_pb2_grpc.ReplicationServiceStub(
        channel_as(cluster, Principal("broker", "3"), cluster.processes["broker-1"].address))
    answers = []
    with pytest.raises(grpc.RpcError) as refused:
        for answer in stub.ReplicaFetchStream(fetches(), timeout=10):
            answers.append(answer)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and len(answers) == 1

    def produces():
        for count in (1, over):
            yield log_pb2.ProduceStreamRequest(request_id=count, produce=log_pb2.ProduceRequest(acks=1, partitions=[
                log_pb2.ProducePartitionData(topic="no-such-topic", partition=p, record_batch=batch_of([b"x"]))
                for p in range(count)]))

    answers = []
    with pytest.raises(grpc.RpcError) as refused:
        for answer in log_stub(cluster, 1).ProduceStream(produces(), timeout=10):
            answers.append(answer)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [a.request_id for a in answers] in ([], [1])  # the first may be answered before the stream ends
    assert refusal_lines(cluster, "Fetch", "TOO_MANY_PARTITIONS")
    assert held_replica(cluster)[0]


def test_a_message_over_the_receive_limit_is_resource_exhausted_and_the_broker_keeps_serving(cluster):
    before = held_replica(cluster)
    too_big = log_pb2.ProduceRequest(acks=1, timeout_ms=5000, partitions=[
        log_pb2.ProducePartitionData(topic="held", partition=0, record_batch=b"x" * (RECEIVE_BYTES_MAX + 1))])
    with pytest.raises(grpc.RpcError) as refused:
        log_stub(cluster, 1).Produce(too_big, timeout=10)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert held_replica(cluster) == before
    assert produce_raw(cluster, 1, "held", batch_of([b"after the big one"])).error_code == E.ERROR_CODE_NONE


def test_a_new_replica_takes_no_leader_epoch_near_the_int32_limit(cluster):
    # A replica holding no epoch has nothing to measure a jump from: without the ceiling it took 2147483647
    # into its epoch cache, and its partition could never get a higher leader epoch.
    reply = control_stub(cluster, 1).LeaderAndIsr(broker_control_pb2.LeaderAndIsrRequest(
        controller_id=9, **real_epochs(cluster, 1), partitions=[
            broker_control_pb2.PartitionState(topic="wedged", partition=0, leader=1, leader_epoch=INT32_MAX, isr=[1],
                                              partition_epoch=0, replicas=[1], is_new=True)]), timeout=10)
    assert reply.error_code == E.ERROR_CODE_NONE
    assert [(p.topic, p.error_code) for p in reply.partitions] == [("wedged", E.ERROR_CODE_INVALID_REQUEST)]
    assert "not a real leader epoch" in reply.partitions[0].error_message
    replica = describe(cluster, 1, "wedged")
    assert replica is None or (not replica.leader and replica.leader_epoch == -1)
