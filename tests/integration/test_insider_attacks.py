"""Insiders with valid certificates (issue 55): a user certificate of the cluster's CA with no ACLs at
all (`User:probe`), one with a few (`User:noisy`), and one compromised host (broker 1's own
certificate), against a secure cluster of 1 controller, 3 brokers and a gateway. Each attack is
refused or harmless, and during the resource attacks the operator's produce, fetch and admin calls
succeed within their usual time (the deadlines below are a few times what they take on a quiet
machine: a starved call waits out its deadline instead).

The review's findings ride along: a topic name that is a path, or too long for a file name, is refused
at every service's edge and touches no disk; a broker does not obey a negative controller epoch,
or any epoch ZooKeeper has not confirmed, even just after a restart.
"""

from __future__ import annotations

import queue
import time

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from replog.client import Consumer, Producer
from replog.common.security.credentials import open_channel
from replog.common.security.principal import Principal
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    broker_control_pb2,
    broker_control_pb2_grpc,
    common_pb2,
    controller_pb2,
    controller_pb2_grpc,
    group_pb2,
    group_pb2_grpc,
    log_pb2,
    log_pb2_grpc,
)

from .broker_helpers import partition_state, wait_for_isr, zk_session
from .controller_helpers import controller, create_topic, wait_for
from .tls_helpers import channel_as, session_certificate

pytestmark = pytest.mark.integration

TOPIC = "guarded"
PARTITIONS = 3
GROUP_PREFIX = "parked-"
IDLE_MS = 4000                  # stream_idle_ms_max on the gateway and brokers of this cluster
PARK_MS = 20_000                # group_initial_rebalance_delay_ms: a new group's first JoinGroup waits this long
CALLS_PER_PRINCIPAL_BROKER = 32  # a quarter of a broker's 128 handler threads
CALLS_PER_PRINCIPAL_GATEWAY = 8  # a quarter of a gateway's 32
OPERATOR_DEADLINE_S = 15.0       # the operator's 300 records (under a second on a quiet machine)
ADMIN_DEADLINE_S = 3.0           # the ListTopics deadline


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("insiders"))
    try:
        idle = ["--stream-idle-ms-max", str(IDLE_MS)]
        cluster = factory(ClusterSpec(controllers=1, brokers=3, gateways=1, extra_args={
            "broker": idle + ["--group-initial-rebalance-delay-ms", str(PARK_MS)], "gateway": idle}))
        with zk_session(cluster) as zk:
            create_topic(zk, TOPIC, {p: tuple((p + i) % 3 + 1 for i in range(3)) for p in range(PARTITIONS)})
            for p in range(PARTITIONS):
                wait_for_isr(cluster, zk, TOPIC, {1, 2, 3}, 60, partition=p)
        admin = admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address))
        admin.CreateAcls(admin_pb2.CreateAclsRequest(bindings=[
            binding("User:noisy", admin_pb2.ACL_RESOURCE_TYPE_TOPIC, TOPIC, admin_pb2.ACL_OPERATION_PRODUCE),
            binding("User:noisy", admin_pb2.ACL_RESOURCE_TYPE_GROUP, GROUP_PREFIX, admin_pb2.ACL_OPERATION_CONSUME,
                    admin_pb2.ACL_PATTERN_TYPE_PREFIXED),
            binding("User:noisy", admin_pb2.ACL_RESOURCE_TYPE_CLUSTER, "replog-cluster",
                    admin_pb2.ACL_OPERATION_DESCRIBE),
        ]), timeout=30)
        yield cluster
    finally:
        factory.teardown()  # also when the setup above failed: no process outlives the module


def binding(principal: str, resource_type, name: str, operation, pattern=admin_pb2.ACL_PATTERN_TYPE_LITERAL):
    return admin_pb2.AclBinding(principal=principal, resource_type=resource_type, pattern_type=pattern,
                                resource_name=name, operation=operation, permission=admin_pb2.ACL_PERMISSION_ALLOW)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    directory = tmp_path_factory.mktemp("insider-certificates")
    return {name: session_certificate(Principal("user", name), directory / name) for name in ("probe", "noisy")}


def broker(cluster, broker_id: int) -> str:
    return cluster.processes[f"broker-{broker_id}"].address


def controller_address(cluster) -> str:
    return cluster.processes["controller-1"].address


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value


def leaders_and_isrs(cluster) -> dict[int, tuple[int, tuple[int, ...]]]:
    with zk_session(cluster) as zk:
        return {p: (s.leader, tuple(sorted(s.isr))) for p in range(PARTITIONS)
                if (s := partition_state(zk, TOPIC, p)) is not None}


def operator_round_trip(cluster, tag: str) -> None:
    """The operator produces 300 records to the 3 partitions, reads them back and lists topics, each within
    its usual time."""
    bootstrap = [p.address for p in cluster.of_role("broker")]
    values = [f"{tag}-{i}".encode() for i in range(300)]
    with Producer(bootstrap, acks="all") as producer:
        handles = [producer.send(TOPIC, value, partition=i % PARTITIONS) for i, value in enumerate(values)]
        placed = [handle.result(timeout=OPERATOR_DEADLINE_S) for handle in handles]
    starts = {p: min(m.offset for m in placed if m.partition == p) for p in range(PARTITIONS)}
    seen = []
    with Consumer(bootstrap, TOPIC, iteration_timeout_ms=int(OPERATOR_DEADLINE_S * 1000)) as consumer:
        consumer.assign(starts)
        deadline = time.monotonic() + OPERATOR_DEADLINE_S
        for record in consumer:
            if record.value.startswith(tag.encode() + b"-"):
                seen.append(record.value)
            if len(seen) == len(values) or time.monotonic() > deadline:
                break
    assert sorted(seen) == sorted(values)
    listed = admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address)).ListTopics(
        admin_pb2.ListTopicsRequest(), timeout=ADMIN_DEADLINE_S)
    assert TOPIC in listed.topics


class HeldStreams:
    """Streams opened and kept open, sending nothing; `settle` waits until every one has been admitted or
    refused (an admitted one stays open with no answer; a refused one ends at once)."""

    def __init__(self, open_call, count: int) -> None:
        self._queues = [queue.SimpleQueue() for _ in range(count)]
        self.calls = [open_call(iter(q.get, None)) for q in self._queues]

    def settle(self, admitted: int, timeout_s: float = 30.0) -> list[grpc.RpcError]:
        wait_for(lambda: sum(c.done() for c in self.calls) >= len(self.calls) - admitted, timeout_s,
                 f"{len(self.calls) - admitted} of {len(self.calls)} streams to be refused")
        return [c for c in self.calls if c.done()]

    def close(self) -> None:
        for call in self.calls:
            call.cancel()


# --- the table ----------------------------------------------------------------------------------


def test_a_broker_cannot_take_another_brokers_replicas_offline(cluster):
    before = leaders_and_isrs(cluster)
    with zk_session(cluster) as zk:
        epoch_of_2 = zk.kazoo.get(schema.broker_path(2))[1].czxid
    request = controller_pb2.LogDirsOfflineRequest(
        broker_id=2, broker_epoch=epoch_of_2, offline_log_dirs=["/var/lib/replog"],
        partitions=[common_pb2.TopicPartition(topic=TOPIC, partition=p) for p in range(PARTITIONS)])
    with channel_as(cluster, Principal("broker", "1"), controller_address(cluster)) as channel:
        error = refused(lambda: controller_pb2_grpc.ControllerServiceStub(channel).LogDirsOffline(request, timeout=10))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "for broker 2" in error.details() and "speaks only for itself" in error.details()
    assert leaders_and_isrs(cluster) == before
    assert all(isr == (1, 2, 3) for _, isr in before.values())


@pytest.mark.parametrize("service", ["broker-1", "controller-1"])
def test_a_service_certificate_administers_nothing_at_the_gateway(cluster, service):
    kind, _, number = service.partition("-")
    grant = admin_pb2.CreateAclsRequest(bindings=[binding("User:probe", admin_pb2.ACL_RESOURCE_TYPE_CLUSTER,
                                                          "replog-cluster", admin_pb2.ACL_OPERATION_ALL)])
    with channel_as(cluster, Principal(kind, number), cluster.gateway_address) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        for call in (lambda: stub.CreateAcls(grant, timeout=10),
                     lambda: stub.CreateTopic(admin_pb2.CreateTopicRequest(name="planted", partitions=1,
                                                                           replication_factor=1), timeout=10),
                     lambda: stub.AlterTopicConfigs(admin_pb2.AlterTopicConfigsRequest(
                         topic=TOPIC, set={"retention.ms": "1"}), timeout=10),
                     lambda: stub.DeleteTopic(admin_pb2.DeleteTopicRequest(name=TOPIC), timeout=10)):
            error = refused(call)
            assert error.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "role's rights" in error.details()
    admin = admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address))
    bindings = admin.DescribeAcls(admin_pb2.DescribeAclsRequest(filter=admin_pb2.AclBindingFilter(
        principal="User:probe")), timeout=10).bindings
    assert list(bindings) == []
    assert "planted" not in admin.ListTopics(admin_pb2.ListTopicsRequest(), timeout=10).topics


def test_a_user_without_acls_describes_nothing(cluster, certificates):
    with open_channel(broker(cluster, 1), certificates["probe"]) as channel:
        stub = log_pb2_grpc.LogServiceStub(channel)
        assert list(stub.DescribeReplicas(log_pb2.DescribeReplicasRequest(), timeout=10).replicas) == []
        named = log_pb2.DescribeReplicasRequest(partitions=[common_pb2.TopicPartition(topic=TOPIC, partition=0)])
        assert refused(lambda: stub.DescribeReplicas(named, timeout=10)).code() == grpc.StatusCode.PERMISSION_DENIED
        assert list(stub.Metadata(log_pb2.MetadataRequest(), timeout=10).topics) == []
        groups = group_pb2_grpc.GroupServiceStub(channel)
        assert list(groups.ListGroups(group_pb2.ListGroupsRequest(), timeout=10).groups) == []
    with open_channel(cluster.gateway_address, certificates["probe"]) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        assert list(admin.ListTopics(admin_pb2.ListTopicsRequest(), timeout=10).topics) == []
        assert list(admin.DescribeTopics(admin_pb2.DescribeTopicsRequest(), timeout=10).topics) == []
        error = refused(lambda: admin.DescribeCluster(admin_pb2.DescribeClusterRequest(), timeout=10))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    # The operator sees all of it.
    with cluster.channel(broker(cluster, 1)) as channel:
        replicas = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(log_pb2.DescribeReplicasRequest(),
                                                                         timeout=10).replicas
        assert {r.partition for r in replicas if r.topic == TOPIC} == set(range(PARTITIONS))


def test_idle_produce_streams_of_one_user_leave_the_operator_its_broker(cluster, certificates):
    """User:probe (no ACLs) is refused before a stream is opened; User:noisy (allowed to produce) holds a
    quarter of the broker's threads at most; the operator's records all go through meanwhile."""
    with open_channel(broker(cluster, 1), certificates["probe"]) as channel:
        held = HeldStreams(log_pb2_grpc.LogServiceStub(channel).ProduceStream, 130)
        try:
            done = held.settle(admitted=0)
            assert {c.code() for c in done} == {grpc.StatusCode.PERMISSION_DENIED}
            assert "any topic" in done[0].details()
        finally:
            held.close()
    with open_channel(broker(cluster, 1), certificates["noisy"]) as channel:
        held = HeldStreams(log_pb2_grpc.LogServiceStub(channel).ProduceStream, 130)
        try:
            done = held.settle(admitted=CALLS_PER_PRINCIPAL_BROKER)
            assert len(done) == 130 - CALLS_PER_PRINCIPAL_BROKER
            assert {c.code() for c in done} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
            assert "User:noisy already holds" in done[0].details()
            operator_round_trip(cluster, "during-idle-streams")
            # Silent streams are ended once idle past the bound, and the identity may open more.
            wait_for(lambda: all(c.done() for c in held.calls), IDLE_MS / 1000 + 20, "idle streams to end")
            assert {c.code() for c in held.calls if c not in done} == {grpc.StatusCode.CANCELLED}
        finally:
            held.close()


def test_idle_reflection_streams_leave_the_operator_its_gateway(cluster, certificates):
    with open_channel(cluster.gateway_address, certificates["probe"]) as channel:
        held = HeldStreams(reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo, 64)
        try:
            done = held.settle(admitted=CALLS_PER_PRINCIPAL_GATEWAY)
            assert {c.code() for c in done} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
            operator_round_trip(cluster, "during-reflection-streams")
            wait_for(lambda: all(c.done() for c in held.calls), IDLE_MS / 1000 + 20, "idle streams to end")
        finally:
            held.close()
    # A reflection stream that asks answers as always.
    with cluster.channel(cluster.gateway_address) as channel:
        answers = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
        services = {s.name for a in answers for s in a.list_services_response.service}
    assert "replog.v1.AdminService" in services


def test_parked_group_joins_of_one_user_leave_the_operator_its_broker(cluster, certificates):
    """Each JoinGroup of a new group waits out the initial rebalance delay holding a thread: one identity
    parks at most its share, and the operator's calls go through meanwhile."""
    with open_channel(broker(cluster, 1), certificates["noisy"]) as channel:
        stub = group_pb2_grpc.GroupServiceStub(channel)
        found = wait_for(lambda: _coordinator(stub), 60, "a coordinator for the parked groups")
    coordinator = f"{found.coordinator.host}:{found.coordinator.port}"
    with open_channel(coordinator, certificates["noisy"]) as channel:
        stub = group_pb2_grpc.GroupServiceStub(channel)
        # A coordinator still loading its offsets partition answers every join at once with an error code,
        # which parks nothing: the joins start once it answers for the group.
        wait_for(lambda: _coordinator_serves(stub), 60, "the coordinator to have loaded the parked groups' partition")
        joins = [stub.JoinGroup.future(group_pb2.JoinGroupRequest(
            group_id=f"{GROUP_PREFIX}0", client_id=f"parked-{i}", session_timeout_ms=30_000,
            rebalance_timeout_ms=PARK_MS + 10_000, protocol_type="consumer",
            protocols=[group_pb2.GroupProtocol(name="range", topics=[TOPIC])]), timeout=PARK_MS / 1000 + 30)
            for i in range(CALLS_PER_PRINCIPAL_BROKER + 8)]
        wait_for(lambda: sum(j.done() for j in joins) >= 8, 30, "the joins over the identity's share to be refused")
        over = [j for j in joins if j.done()]
        assert len(over) == 8 and {j.exception().code() for j in over} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        operator_round_trip(cluster, "during-parked-joins")
        answered = [j.result() for j in joins if j not in over]
    assert len(answered) == CALLS_PER_PRINCIPAL_BROKER
    assert {a.error_code for a in answered} == {common_pb2.ERROR_CODE_NONE}


def _coordinator_serves(stub):
    answer = stub.Heartbeat(group_pb2.HeartbeatRequest(group_id=f"{GROUP_PREFIX}0", generation_id=0,
                                                       member_id="readiness-probe"), timeout=10)
    return answer.error_code not in {common_pb2.ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS,
                                     common_pb2.ERROR_CODE_NOT_COORDINATOR,
                                     common_pb2.ERROR_CODE_COORDINATOR_NOT_AVAILABLE}


def _coordinator(stub):
    found = stub.FindCoordinator(group_pb2.FindCoordinatorRequest(group_id=f"{GROUP_PREFIX}0"), timeout=10)
    return found if found.error_code == common_pb2.ERROR_CODE_NONE else None


# --- the review's findings -------------------------------------------------------------------------------


@pytest.mark.parametrize("topic, problem", [("../../x", "'/'"), ("t" * 256, "256 characters")])
def test_a_topic_name_that_is_no_directory_name_is_refused_at_every_edge(cluster, topic, problem):
    data_root = cluster.data_dir("broker-1").parent
    before = sorted(p.name for p in data_root.parent.iterdir()) + sorted(p.name for p in data_root.iterdir())
    with zk_session(cluster) as zk:
        _, controller_epoch = controller(zk)
        broker_epoch = zk.kazoo.get(schema.broker_path(1))[1].czxid
    plant = broker_control_pb2.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        partitions=[broker_control_pb2.PartitionState(topic=topic, partition=0, leader=1, leader_epoch=1,
                                                      isr=[1], replicas=[1], partition_epoch=1, is_new=True)])
    with channel_as(cluster, Principal("controller", "1"), broker(cluster, 1)) as channel:
        error = refused(lambda: broker_control_pb2_grpc.BrokerControlServiceStub(channel).LeaderAndIsr(plant,
                                                                                                        timeout=10))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and problem in error.details()
    assert "partitions[0].topic" in error.details()
    with cluster.channel(broker(cluster, 1)) as channel:
        produce = log_pb2.ProduceRequest(acks=1, partitions=[log_pb2.ProducePartitionData(topic=topic)])
        error = refused(lambda: log_pb2_grpc.LogServiceStub(channel).Produce(produce, timeout=10))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    with channel_as(cluster, Principal("broker", "1"), controller_address(cluster)) as channel:
        alter = controller_pb2.AlterPartitionRequest(broker_id=1, partitions=[controller_pb2.AlterPartitionItem(
            topic=topic, partition=0, leader_epoch=1, new_isr=[1])])
        error = refused(lambda: controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(alter, timeout=10))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    after = sorted(p.name for p in data_root.parent.iterdir()) + sorted(p.name for p in data_root.iterdir())
    assert after == before, "nothing created beside the log directories"
    assert not any(p.name.startswith("t" * 200) for p in cluster.data_dir("broker-1").iterdir())
    assert cluster.healthy("broker-1")
    operator_round_trip(cluster, f"after-{len(topic)}")


def test_a_restarted_broker_obeys_no_epoch_zookeeper_has_not_confirmed(cluster):
    cluster.restart("broker-3")
    with zk_session(cluster) as zk:
        _, current = controller(zk)
        broker_epoch = zk.kazoo.get(schema.broker_path(3))[1].czxid
        for p in range(PARTITIONS):
            wait_for_isr(cluster, zk, TOPIC, {1, 2, 3}, 60, partition=p)
    before = leaders_and_isrs(cluster)
    with channel_as(cluster, Principal("controller", "1"), broker(cluster, 3)) as channel:
        stub = broker_control_pb2_grpc.BrokerControlServiceStub(channel)
        for forged in (-1, current - 1, current + 1):
            answer = stub.StopReplica(broker_control_pb2.StopReplicaRequest(
                controller_id=1, controller_epoch=forged, broker_epoch=broker_epoch, partitions=[
                    broker_control_pb2.StopReplicaPartition(topic=TOPIC, partition=p, leader_epoch=-1, delete=True)
                    for p in range(PARTITIONS)]), timeout=10)
            assert answer.error_code == common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH, forged
    with zk_session(cluster) as zk:
        assert controller(zk)[1] == current, "no fence moved"
    assert leaders_and_isrs(cluster) == before
    assert {r.partition for r in _replicas(cluster, 3)} == set(range(PARTITIONS))


def _replicas(cluster, broker_id: int):
    with cluster.channel(broker(cluster, broker_id)) as channel:
        reply = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(log_pb2.DescribeReplicasRequest(), timeout=10)
    return [r for r in reply.replicas if r.topic == TOPIC]
