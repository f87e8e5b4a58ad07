"""ACLs enforced on a secure cluster: a user with no ACL is refused (PERMISSION_DENIED, nothing
written or read), an ACL added with `replog acls add` applies within seconds without a restart,
a deny beats an allow, prefixed patterns cover the names that start with them, and the gateway's
admin requests are checked too. The operator (User:admin) is a super user by default; the user
here is `User:alice`, with a certificate from the session's CA."""

from __future__ import annotations

import time

import grpc
import pytest

from replog.common.security.credentials import open_channel
from replog.common.security.principal import Principal
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc, common_pb2, log_pb2, log_pb2_grpc

from .broker_helpers import batch_of, log_stub, wait_for_leader, zk_session
from .gateway_helpers import cli_runner
from .tls_helpers import session_certificate

pytestmark = pytest.mark.integration

TOPIC = "orders"
APPLY_DEADLINE_S = 10.0  # a change reaches every broker through one ZooKeeper watch


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("acls-enforced"))
    cluster = factory(ClusterSpec(controllers=1, brokers=1, gateways=1))
    for topic in (TOPIC, "orders-eu", "payments"):
        admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address)).CreateTopic(
            admin_pb2.CreateTopicRequest(name=topic, partitions=1, replication_factor=1), timeout=30)
        with zk_session(cluster) as zk:
            wait_for_leader(cluster, zk, topic, 1, 30)
    yield cluster
    factory.teardown()


@pytest.fixture(scope="module")
def alice_channel(cluster, tmp_path_factory):
    files = session_certificate(Principal("user", "alice"), tmp_path_factory.mktemp("alice"))
    channels = {}

    def channel(address: str) -> grpc.Channel:
        if address not in channels:
            channels[address] = open_channel(address, files)
        return channels[address]

    yield channel
    for opened in channels.values():
        opened.close()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


@pytest.fixture(autouse=True)
def no_acls_left(cluster, alice_channel):
    """Each test starts with no ACL, on the broker and the gateway alike (both have seen the deletion)."""
    yield
    admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address)).DeleteAcls(
        admin_pb2.DeleteAclsRequest(filters=[admin_pb2.AclBindingFilter()]), timeout=10)
    deadline = time.monotonic() + APPLY_DEADLINE_S
    while (list(as_alice(cluster, alice_channel).Metadata(log_pb2.MetadataRequest(), timeout=10).topics)
           or list(alice_admin(cluster, alice_channel).ListTopics(admin_pb2.ListTopicsRequest(), timeout=10).topics)):
        assert time.monotonic() < deadline, f"the deletion of every ACL did not apply within {APPLY_DEADLINE_S} s"
        time.sleep(0.1)


def broker_address(cluster) -> str:
    return cluster.processes["broker-1"].address


def as_alice(cluster, alice_channel) -> log_pb2_grpc.LogServiceStub:
    return log_pb2_grpc.LogServiceStub(alice_channel(broker_address(cluster)))


def alice_admin(cluster, alice_channel) -> admin_pb2_grpc.AdminServiceStub:
    return admin_pb2_grpc.AdminServiceStub(alice_channel(cluster.gateway_address))


def produce(stub, topic: str = TOPIC, value: bytes = b"x") -> log_pb2.ProduceResponse:
    return stub.Produce(log_pb2.ProduceRequest(acks=-1, timeout_ms=10_000, partitions=[
        log_pb2.ProducePartitionData(topic=topic, partition=0, record_batch=batch_of([value]))]), timeout=20)


def fetch(stub, topic: str = TOPIC) -> log_pb2.FetchResponse:
    return stub.Fetch(log_pb2.FetchRequest(partitions=[log_pb2.FetchPartition(topic=topic, partition=0,
                                                                               fetch_offset=0)],
                                           max_bytes=1 << 20, decode_records=True), timeout=20)


def end_offset(cluster, topic: str = TOPIC) -> int:
    reply = log_stub(cluster, 1).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
        log_pb2.ListOffsetsPartition(topic=topic, partition=0, spec=log_pb2.OFFSET_SPEC_LATEST)]), timeout=10)
    return reply.partitions[0].offset


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED, raised.value
    return raised.value


def eventually(call, what: str):
    """`call()` until it stops being refused, within APPLY_DEADLINE_S; returns its answer."""
    deadline = time.monotonic() + APPLY_DEADLINE_S
    while True:
        try:
            return call()
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.PERMISSION_DENIED or time.monotonic() > deadline:
                raise AssertionError(f"{what}: still {exc.code().name} after {APPLY_DEADLINE_S} s: {exc.details()}")
        time.sleep(0.1)


def eventually_refused(call, what: str) -> grpc.RpcError:
    deadline = time.monotonic() + APPLY_DEADLINE_S
    while True:
        try:
            call()
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.PERMISSION_DENIED, exc
            return exc
        assert time.monotonic() < deadline, f"{what}: still allowed after {APPLY_DEADLINE_S} s"
        time.sleep(0.1)


def test_a_user_without_acls_is_refused_and_nothing_is_written(cluster, alice_channel):
    before = end_offset(cluster)
    error = refused(lambda: produce(as_alice(cluster, alice_channel)))
    assert "User:alice" in error.details() and "produce" in error.details() and f"'{TOPIC}'" in error.details()
    assert end_offset(cluster) == before
    error = refused(lambda: fetch(as_alice(cluster, alice_channel)))
    assert "consume" in error.details()
    refused(lambda: as_alice(cluster, alice_channel).InitProducerId(
        log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1), timeout=10))
    listed = as_alice(cluster, alice_channel).Metadata(log_pb2.MetadataRequest(), timeout=10)
    assert list(listed.topics) == []


def test_a_refusal_is_logged_once_per_principal_operation_and_topic(cluster, alice_channel):
    for _ in range(3):
        refused(lambda: produce(as_alice(cluster, alice_channel), "payments"))
    line = "ACL refused: User:alice may not produce topic 'payments'"
    assert cluster.log_path("broker-1").read_text().count(line) == 1


def test_granting_produce_with_the_cli_applies_without_a_restart(cluster, alice_channel, replog):
    refused(lambda: produce(as_alice(cluster, alice_channel)))
    before = end_offset(cluster)
    code, _, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", "produce", "--topic", TOPIC)
    assert code == 0, err
    answer = eventually(lambda: produce(as_alice(cluster, alice_channel), value=b"granted"), "produce after the grant")
    assert answer.partitions[0].error_code == 0
    assert end_offset(cluster) == before + 1
    refused(lambda: fetch(as_alice(cluster, alice_channel)))  # produce does not grant consume
    as_alice(cluster, alice_channel).InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                                                    timeout=10)
    listed = as_alice(cluster, alice_channel).Metadata(log_pb2.MetadataRequest(), timeout=10)
    assert [t.name for t in listed.topics] == [TOPIC]  # produce implies describe


def test_a_deny_beats_an_allow(cluster, alice_channel, replog):
    replog("acls", "add", "--allow-principal", "User:alice", "--operation", "all", "--topic", "*")
    eventually(lambda: produce(as_alice(cluster, alice_channel)), "produce under allow all")
    replog("acls", "add", "--deny-principal", "User:alice", "--operation", "produce", "--topic", "ord",
           "--resource-pattern-type", "prefixed")
    eventually_refused(lambda: produce(as_alice(cluster, alice_channel)), "produce under the deny")
    refused(lambda: produce(as_alice(cluster, alice_channel), "orders-eu"))
    assert produce(as_alice(cluster, alice_channel), "payments").partitions[0].error_code == 0
    assert fetch(as_alice(cluster, alice_channel)).partitions[0].error_code == 0  # the deny is of produce only


def test_a_prefixed_allow_covers_the_topics_that_start_with_it(cluster, alice_channel, replog):
    replog("acls", "add", "--allow-principal", "User:alice", "--operation", "consume", "--topic", "orders",
           "--resource-pattern-type", "prefixed")
    eventually(lambda: fetch(as_alice(cluster, alice_channel)), "fetch under the prefix")
    assert fetch(as_alice(cluster, alice_channel), "orders-eu").partitions[0].error_code == 0
    refused(lambda: fetch(as_alice(cluster, alice_channel), "payments"))


def test_the_gateway_checks_admin_requests(cluster, alice_channel, replog):
    admin = alice_admin(cluster, alice_channel)
    error = refused(lambda: admin.CreateTopic(admin_pb2.CreateTopicRequest(name="alices", partitions=1,
                                                                           replication_factor=1), timeout=10))
    assert "User:alice" in error.details() and "create" in error.details()
    refused(lambda: admin.CreateAcls(admin_pb2.CreateAclsRequest(bindings=[admin_pb2.AclBinding(
        principal="User:alice", resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
        pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL, resource_name="*",
        operation=admin_pb2.ACL_OPERATION_ALL, permission=admin_pb2.ACL_PERMISSION_ALLOW)]), timeout=10))
    refused(lambda: admin.DescribeCluster(admin_pb2.DescribeClusterRequest(), timeout=10))
    assert list(admin.ListTopics(admin_pb2.ListTopicsRequest(), timeout=10).topics) == []
    assert replog("acls", "list")[1].strip() == "No ACLs match."  # the refused CreateAcls stored nothing

    replog("acls", "add", "--allow-principal", "User:alice", "--operation", "describe", "--topic", "payments")
    eventually(lambda: admin.DescribeTopics(admin_pb2.DescribeTopicsRequest(names=["payments"]), timeout=10),
               "describe after the grant")
    assert list(admin.ListTopics(admin_pb2.ListTopicsRequest(), timeout=10).topics) == ["payments"]
    refused(lambda: admin.DeleteTopic(admin_pb2.DeleteTopicRequest(name="payments"), timeout=10))


def test_delete_records_needs_delete_on_the_topic_at_the_gateway_and_the_broker(cluster, alice_channel, replog):
    produce(log_stub(cluster, 1), "orders-eu", b"kept-or-not")
    admin = alice_admin(cluster, alice_channel)
    request = admin_pb2.DeleteRecordsRequest(partitions=[
        admin_pb2.RecordsDeletion(topic="orders-eu", partition=0, offset=-1)])
    error = refused(lambda: admin.DeleteRecords(request, timeout=10))
    assert "User:alice" in error.details() and "delete" in error.details() and "'orders-eu'" in error.details()
    direct = log_pb2.AdvanceLogStartOffsetRequest(partitions=[
        log_pb2.LogStartOffsetTarget(topic="orders-eu", partition=0, offset=-1)])
    refused(lambda: as_alice(cluster, alice_channel).AdvanceLogStartOffset(direct, timeout=10))
    earliest = log_pb2.ListOffsetsRequest(partitions=[
        log_pb2.ListOffsetsPartition(topic="orders-eu", partition=0, spec=log_pb2.OFFSET_SPEC_EARLIEST)])
    assert log_stub(cluster, 1).ListOffsets(earliest, timeout=10).partitions[0].offset == 0  # nothing deleted

    replog("acls", "add", "--allow-principal", "User:alice", "--operation", "delete", "--topic", "orders-eu")
    reply = eventually(lambda: admin.DeleteRecords(request, timeout=10), "DeleteRecords after the grant")
    assert reply.partitions[0].error_code == common_pb2.ERROR_CODE_NONE
    assert reply.partitions[0].low_watermark == end_offset(cluster, "orders-eu")
