"""Every bad admin request is refused with the right gRPC status and a message naming
the bad value, and nothing is written to ZooKeeper; accepted ones write exactly the
documented znodes. Two gateways run at once (the gateway is stateless).

No controller runs here (ClusterSpec(controllers=0)): these tests look at what the
gateway writes, not at what a controller would do with it.
"""

from __future__ import annotations

import threading

import grpc
import pytest

from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2 as A
from replog.v1 import admin_pb2_grpc
from replog.v1 import common_pb2 as C

from .gateway_helpers import kazoo_client, running_cluster

pytestmark = pytest.mark.integration
WATCHED = ("/brokers/topics", "/config", "/admin")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("gateway-validation"), ClusterSpec(controllers=0, brokers=3, gateways=2))


@pytest.fixture(scope="module")
def kazoo(cluster):
    yield from kazoo_client(cluster)


@pytest.fixture(scope="module")
def admin(cluster):
    with cluster.channel(cluster.gateway_address) as channel:
        yield admin_pb2_grpc.AdminServiceStub(channel)


@pytest.fixture(scope="module")
def existing(admin):
    """A topic for the refusals that need one: orders, 2 partitions on brokers 1,2 / 2,3."""
    admin.CreateTopic(A.CreateTopicRequest(name="orders", assignment=[
        A.ReplicaAssignment(partition=0, replicas=[1, 2]), A.ReplicaAssignment(partition=1, replicas=[2, 3])]))
    return "orders"


def snapshot(kazoo) -> dict[str, bytes]:
    found: dict[str, bytes] = {}

    def walk(path: str) -> None:
        if not kazoo.exists(path):
            return
        found[path] = kazoo.get(path)[0]
        for child in kazoo.get_children(path):
            walk(f"{path}/{child}")

    for root in WATCHED:
        walk(root)
    return found


def assignment(*replica_lists, topic=""):
    return [A.ReplicaAssignment(topic=topic, partition=p, replicas=r) for p, r in enumerate(replica_lists)]


INVALID, PRECONDITION = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION
NOT_FOUND, EXISTS = grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS

REFUSED = [
    ("CreateTopic", A.CreateTopicRequest(name="", partitions=1, replication_factor=1), INVALID, "empty"),
    ("CreateTopic", A.CreateTopicRequest(name=".", partitions=1, replication_factor=1), INVALID, "'.'"),
    ("CreateTopic", A.CreateTopicRequest(name="..", partitions=1, replication_factor=1), INVALID, "'..'"),
    ("CreateTopic", A.CreateTopicRequest(name="x" * 250, partitions=1, replication_factor=1), INVALID, "250"),
    ("CreateTopic", A.CreateTopicRequest(name="a/b", partitions=1, replication_factor=1), INVALID, "'/'"),
    ("CreateTopic", A.CreateTopicRequest(name="a b", partitions=1, replication_factor=1), INVALID, "' '"),
    ("CreateTopic", A.CreateTopicRequest(name="t", partitions=0, replication_factor=1), INVALID, "got 0"),
    ("CreateTopic", A.CreateTopicRequest(name="t", partitions=-2, replication_factor=1), INVALID, "got -2"),
    ("CreateTopic", A.CreateTopicRequest(name="t", partitions=1, replication_factor=0), INVALID, "got 0"),
    ("CreateTopic", A.CreateTopicRequest(name="t", partitions=1, replication_factor=4), PRECONDITION,
     "Replication factor: 4 larger than available brokers: 3"),
    ("CreateTopic", A.CreateTopicRequest(name="t", partitions=1, replication_factor=1, configs={"colour": "red"}),
     INVALID, "'colour'"),
    ("CreateTopic", A.CreateTopicRequest(name="t", partitions=1, replication_factor=1,
                                         configs={"min.insync.replicas": "0"}), INVALID, "min.insync.replicas"),
    ("CreateTopic", A.CreateTopicRequest(name="t", assignment=assignment([1, 1])), INVALID, "1, 1"),
    ("CreateTopic", A.CreateTopicRequest(name="t", assignment=assignment([1, 9])), INVALID, "1, 9"),
    ("CreateTopic", A.CreateTopicRequest(name="t", assignment=assignment([1, 2], [3])), INVALID,
     "Inconsistent replication factor"),
    ("CreateTopic", A.CreateTopicRequest(name="t", assignment=[
        A.ReplicaAssignment(partition=0, replicas=[1]), A.ReplicaAssignment(partition=0, replicas=[2])]),
     INVALID, "Partition 0 is listed twice"),
    ("CreateTopic", A.CreateTopicRequest(name="orders", partitions=1, replication_factor=1), EXISTS, "'orders'"),
    ("CreateTopic", A.CreateTopicRequest(name="orders", partitions=1, replication_factor=1, validate_only=True),
     EXISTS, "'orders'"),
    ("DeleteTopic", A.DeleteTopicRequest(name="nope"), NOT_FOUND, "'nope'"),
    ("DeleteTopic", A.DeleteTopicRequest(name="../x"), INVALID, "'/'"),
    ("DescribeTopics", A.DescribeTopicsRequest(names=["orders", "nope"]), NOT_FOUND, "'nope'"),
    ("CreatePartitions", A.CreatePartitionsRequest(topic="orders", total_count=2), INVALID,
     "2 would not be an increase"),
    ("CreatePartitions", A.CreatePartitionsRequest(topic="nope", total_count=3), NOT_FOUND, "'nope'"),
    ("CreatePartitions", A.CreatePartitionsRequest(topic="orders", total_count=3, assignment=[
        A.ReplicaAssignment(partition=2, replicas=[1, 7])]), INVALID, "1, 7"),
    ("AlterTopicConfigs", A.AlterTopicConfigsRequest(topic="orders", set={"colour": "red"}), INVALID, "'colour'"),
    ("AlterTopicConfigs", A.AlterTopicConfigsRequest(topic="orders", set={"retention.ms": "soon"}), INVALID, "'soon'"),
    ("AlterTopicConfigs", A.AlterTopicConfigsRequest(topic="orders", delete=["colour"]), INVALID, "'colour'"),
    ("AlterTopicConfigs", A.AlterTopicConfigsRequest(topic="nope", set={"retention.ms": "1"}), NOT_FOUND, "'nope'"),
    ("GenerateReassignment", A.GenerateReassignmentRequest(topics=["orders"], broker_ids=[1, 8]), INVALID,
     "Unknown broker 8"),
    ("GenerateReassignment", A.GenerateReassignmentRequest(topics=["orders"], broker_ids=[2, 2]), INVALID,
     "Broker 2 is listed twice"),
    ("ExecuteReassignment", A.ExecuteReassignmentRequest(partitions=[
        A.ReplicaAssignment(topic="orders", partition=0, replicas=[2, 3]),
        A.ReplicaAssignment(topic="orders", partition=0, replicas=[3, 1])]), INVALID, "orders-0 is listed twice"),
    ("ExecuteReassignment", A.ExecuteReassignmentRequest(partitions=[
        A.ReplicaAssignment(topic="orders", partition=0, replicas=[3, 3])]), INVALID, "Broker 3 is listed twice"),
    ("ExecuteReassignment", A.ExecuteReassignmentRequest(partitions=[
        A.ReplicaAssignment(topic="orders", partition=0, replicas=[3, 42])]), INVALID, "Unknown broker 42"),
    ("ExecuteReassignment", A.ExecuteReassignmentRequest(partitions=[
        A.ReplicaAssignment(topic="orders", partition=5, replicas=[3, 1])]), INVALID, "orders-5"),
    ("ExecuteReassignment", A.ExecuteReassignmentRequest(partitions=[
        A.ReplicaAssignment(topic="orders", partition=0, replicas=[3, 1])], throttle_bytes_per_s=-1), INVALID, "-1"),
    ("ExecuteReassignment", A.ExecuteReassignmentRequest(), INVALID, "names no partitions"),
    ("CancelReassignment", A.CancelReassignmentRequest(), PRECONDITION, "No reassignment is in progress"),
    ("CancelReassignment", A.CancelReassignmentRequest(partitions=[C.TopicPartition(topic="orders", partition=1)]),
     PRECONDITION, "orders-1"),
    ("ElectLeaders", A.ElectLeadersRequest(all=True), INVALID, "Election type 0"),
    ("ElectLeaders", A.ElectLeadersRequest(election_type=A.ELECTION_TYPE_PREFERRED), INVALID, "Name the partitions"),
    ("ElectLeaders", A.ElectLeadersRequest(election_type=A.ELECTION_TYPE_PREFERRED, all=True, timeout_ms=-5),
     INVALID, "-5"),
]


@pytest.mark.parametrize("method, request_, status, fragment", REFUSED,
                         ids=[f"{m}-{i}" for i, (m, *_) in enumerate(REFUSED)])
def test_refused_requests_name_the_bad_value_and_write_nothing(admin, kazoo, existing, method, request_, status,
                                                                fragment):
    before = snapshot(kazoo)
    with pytest.raises(grpc.RpcError) as refused:
        getattr(admin, method)(request_, timeout=10)
    assert refused.value.code() == status, refused.value.details()
    assert fragment in refused.value.details(), refused.value.details()
    assert snapshot(kazoo) == before


def test_create_writes_assignment_and_config_overrides(admin, kazoo):
    reply = admin.CreateTopic(A.CreateTopicRequest(
        name="payments", partitions=4, replication_factor=2, configs={"min.insync.replicas": "2"},
        start_index=1, replica_shift=0), timeout=10)
    stored = schema.TopicAssignment.decode("payments", kazoo.get(schema.topic_path("payments"))[0])
    assert {a.partition: tuple(a.replicas) for a in reply.assignment} == dict(stored.partitions)
    assert sorted(stored.partitions) == [0, 1, 2, 3]
    # Racks a/b/c on brokers 1/2/3: each partition spans two racks, leaders spread evenly.
    assert sorted(r[0] for r in stored.partitions.values()).count(1) <= 2
    config = schema.TopicConfigRecord.decode("payments", kazoo.get(schema.topic_config_path("payments"))[0])
    assert dict(config.config) == {"min.insync.replicas": "2"}
    assert reply.configs["min.insync.replicas"] == "2" and reply.configs["unclean.leader.election.enable"] == "false"


def test_validate_only_returns_the_assignment_and_writes_nothing(admin, kazoo):
    before = snapshot(kazoo)
    reply = admin.CreateTopic(A.CreateTopicRequest(name="dry", partitions=3, replication_factor=3,
                                                   validate_only=True), timeout=10)
    assert [sorted(a.replicas) for a in reply.assignment] == [[1, 2, 3]] * 3
    reply = admin.CreatePartitions(A.CreatePartitionsRequest(topic="payments", total_count=6, validate_only=True),
                                   timeout=10)
    assert [a.partition for a in reply.assignment] == [4, 5]
    assert snapshot(kazoo) == before


def test_delete_marks_the_topic_once(admin, kazoo):
    admin.CreateTopic(A.CreateTopicRequest(name="doomed", partitions=1, replication_factor=1), timeout=10)
    admin.DeleteTopic(A.DeleteTopicRequest(name="doomed"), timeout=10)
    assert kazoo.exists(schema.delete_topic_path("doomed"))
    before = snapshot(kazoo)
    with pytest.raises(grpc.RpcError) as refused:
        admin.DeleteTopic(A.DeleteTopicRequest(name="doomed"), timeout=10)
    assert refused.value.code() == PRECONDITION and "'doomed' is already being deleted" in refused.value.details()
    assert snapshot(kazoo) == before
    listed = admin.ListTopics(A.ListTopicsRequest(), timeout=10).topics
    assert "doomed" not in listed and "doomed" in admin.ListTopics(A.ListTopicsRequest(include_deleting=True)).topics


def test_two_gateways_racing_to_create_one_topic_let_exactly_one_win(cluster):
    outcomes: list[str] = []
    addresses = [p.address for p in cluster.of_role("gateway")] * 3
    barrier = threading.Barrier(len(addresses))

    def create(address: str) -> None:
        with cluster.channel(address) as channel:
            stub = admin_pb2_grpc.AdminServiceStub(channel)
            barrier.wait()
            try:
                stub.CreateTopic(A.CreateTopicRequest(name="contested", partitions=2, replication_factor=2), timeout=10)
                outcomes.append("created")
            except grpc.RpcError as exc:
                outcomes.append(exc.code().name)

    threads = [threading.Thread(target=create, args=(a,)) for a in addresses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["ALREADY_EXISTS"] * (len(addresses) - 1) + ["created"]
    with cluster.channel(cluster.of_role("gateway")[1].address) as channel:
        described = admin_pb2_grpc.AdminServiceStub(channel).DescribeTopics(
            A.DescribeTopicsRequest(names=["contested"]), timeout=10)
    assert len(described.topics[0].partitions) == 2


def test_concurrent_config_changes_through_two_gateways_all_apply(cluster, kazoo, existing):
    keys = ["retention.ms", "segment.ms", "retention.bytes", "flush.ms"]
    gateways = [p.address for p in cluster.of_role("gateway")]
    errors: list[BaseException] = []

    def alter(index: int) -> None:
        with cluster.channel(gateways[index % 2]) as channel:
            try:
                admin_pb2_grpc.AdminServiceStub(channel).AlterTopicConfigs(
                    A.AlterTopicConfigsRequest(topic="orders", set={keys[index]: str(1000 + index)}), timeout=10)
            except grpc.RpcError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=alter, args=(i,)) for i in range(len(keys))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    config = schema.TopicConfigRecord.decode("orders", kazoo.get(schema.topic_config_path("orders"))[0]).config
    assert {k: config[k] for k in keys} == {k: str(1000 + i) for i, k in enumerate(keys)}
