"""`replog acls add|list|remove` and the AdminService ACL methods against a real gateway and
ZooKeeper: round trips, JSON output, bad input refused with nothing written, and a watcher
(the one brokers and gateways run) seeing a change without a restart."""

from __future__ import annotations

import json
import threading
import time

import grpc
import pytest

from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.store import AclWatcher
from replog.common.channels import CHANNEL_OPTIONS
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc

from .gateway_helpers import cli_runner, kazoo_client, running_cluster

pytestmark = pytest.mark.integration

WATCH_DEADLINE_S = 10.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("acls-admin"), ClusterSpec(controllers=0, brokers=1, gateways=1))


@pytest.fixture(scope="module")
def kazoo(cluster):
    yield from kazoo_client(cluster)


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


@pytest.fixture
def admin(cluster):
    with cluster.channel(cluster.gateway_address, options=CHANNEL_OPTIONS) as channel:
        yield admin_pb2_grpc.AdminServiceStub(channel)


@pytest.fixture(autouse=True)
def no_acls_left(admin):
    yield
    admin.DeleteAcls(admin_pb2.DeleteAclsRequest(filters=[admin_pb2.AclBindingFilter()]), timeout=10)


def listed(replog, *argv):
    code, out, err = replog("-o", "json", "acls", "list", *argv)
    assert code == 0, err
    return json.loads(out)["acls"]


def acl(principal, permission, operation, name, pattern="literal", resource="topic"):
    return {"principal": principal, "permission": permission, "operation": operation, "resource_type": resource,
            "pattern_type": pattern, "resource_name": name}


def test_add_list_remove_round_trip(replog, kazoo):
    code, out, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", "produce",
                            "--topic", "orders", "--resource-pattern-type", "prefixed")
    assert code == 0 and out.split("\n")[:3] == [
        "Added 1 ACL(s):",
        "PRINCIPAL   PERMISSION  OPERATION  RESOURCE  PATTERN   NAME",
        "User:alice  allow       produce    topic     prefixed  orders"], out
    replog("acls", "remove", "--topic", "orders", "--resource-pattern-type", "prefixed")
    code, out, err = replog("-o", "json", "acls", "add", "--allow-principal", "User:alice", "--operation", "produce",
                            "--operation", "consume", "--topic", "orders")
    assert code == 0, err
    assert json.loads(out) == {"created": [acl("User:alice", "allow", "consume", "orders"),
                                           acl("User:alice", "allow", "produce", "orders")], "already_present": []}
    code, out, _ = replog("-o", "json", "acls", "add", "--allow-principal", "User:alice", "--operation", "produce",
                          "--topic", "orders")
    assert json.loads(out) == {"created": [], "already_present": [acl("User:alice", "allow", "produce", "orders")]}
    replog("acls", "add", "--deny-principal", "User:*", "--operation", "all", "--topic", "secret.",
           "--resource-pattern-type", "prefixed")
    replog("acls", "add", "--allow-principal", "User:ops", "--operation", "cluster_admin", "--cluster")

    assert listed(replog) == [acl("User:*", "deny", "all", "secret.", "prefixed"),
                              acl("User:alice", "allow", "consume", "orders"),
                              acl("User:alice", "allow", "produce", "orders"),
                              acl("User:ops", "allow", "cluster_admin", "replog-cluster", resource="cluster")]
    assert listed(replog, "--principal", "User:ops") == [
        acl("User:ops", "allow", "cluster_admin", "replog-cluster", resource="cluster")]
    assert listed(replog, "--topic", "secret.stuff", "--resource-pattern-type", "match") == [
        acl("User:*", "deny", "all", "secret.", "prefixed")]
    data = json.loads(kazoo.get(schema.acl_resource_path("topic", "literal", "orders"))[0])
    assert [a["operation"] for a in data["acls"]] == ["consume", "produce"]

    code, out, _ = replog("-o", "json", "acls", "remove", "--allow-principal", "User:alice", "--operation", "produce",
                          "--topic", "orders")
    assert json.loads(out) == {"deleted": [acl("User:alice", "allow", "produce", "orders")]}
    code, out, _ = replog("-o", "json", "acls", "remove", "--topic", "orders")
    assert json.loads(out) == {"deleted": [acl("User:alice", "allow", "consume", "orders")]}
    assert kazoo.exists(schema.acl_resource_path("topic", "literal", "orders")) is None  # gone with its last ACL
    code, out, _ = replog("acls", "list", "--topic", "orders")
    assert code == 0 and out.strip() == "No ACLs match."


@pytest.mark.parametrize("argv, words", [
    (["--allow-principal", "", "--operation", "produce", "--topic", "t"], "the principal is empty"),
    (["--allow-principal", "alice", "--operation", "produce", "--topic", "t"], "User:<name>"),
    (["--allow-principal", "User:a", "--operation", "cluster_admin", "--topic", "t"], "does not apply to a topic"),
    (["--allow-principal", "User:a", "--operation", "produce", "--cluster"], "does not apply to a cluster"),
    (["--allow-principal", "User:a", "--operation", "produce", "--topic", "a/b"], "may only hold"),
    (["--allow-principal", "User:a", "--operation", "produce", "--topic", "*", "--resource-pattern-type", "prefixed"],
     "'*' is a literal pattern"),
])
def test_bad_bindings_are_refused_with_the_reason_and_nothing_is_stored(replog, argv, words):
    code, out, err = replog("acls", "add", *argv)
    assert code == 1 and words in err and "(INVALID_ARGUMENT)" in err, err
    assert err.count("\n") == 1
    assert listed(replog) == []


def test_an_unknown_operation_is_a_usage_error_naming_the_choices(replog):
    code, _, err = replog("acls", "add", "--allow-principal", "User:a", "--operation", "write", "--topic", "t")
    assert code == 2 and "invalid choice: 'write'" in err and "produce" in err


def test_the_api_refuses_unset_and_unknown_enum_values(admin):
    binding = admin_pb2.AclBinding(principal="User:a", resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
                                   pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL, resource_name="t",
                                   permission=admin_pb2.ACL_PERMISSION_ALLOW)
    for operation, words in ((0, "no operation given"), (99, "operation: 99 is no value of AclOperation")):
        binding.operation = operation
        with pytest.raises(grpc.RpcError) as refused:
            admin.CreateAcls(admin_pb2.CreateAclsRequest(bindings=[binding]), timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and words in refused.value.details()
    with pytest.raises(grpc.RpcError) as refused:
        admin.DeleteAcls(admin_pb2.DeleteAclsRequest(), timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as refused:
        admin.CreateAcls(admin_pb2.CreateAclsRequest(), timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_watcher_sees_every_change_without_a_restart(cluster, replog):
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    authorizer = Authorizer(())
    watcher = AclWatcher(zk, authorizer)
    try:
        watcher.start()
        assert not authorizer.authorize("User:alice", "produce", "topic", "orders")
        replog("acls", "add", "--allow-principal", "User:alice", "--operation", "produce", "--topic", "orders")
        wait_for(lambda: authorizer.authorize("User:alice", "produce", "topic", "orders"), "the allow to apply")
        replog("acls", "add", "--deny-principal", "User:alice", "--operation", "produce", "--topic", "ord",
               "--resource-pattern-type", "prefixed")
        wait_for(lambda: not authorizer.authorize("User:alice", "produce", "topic", "orders"), "the deny to apply")
        replog("acls", "remove", "--topic", "ord", "--resource-pattern-type", "prefixed")
        wait_for(lambda: authorizer.authorize("User:alice", "produce", "topic", "orders"), "the deny to go")
    finally:
        watcher.stop()
        zk.stop()


def test_concurrent_adds_on_one_resource_all_land(cluster, admin):
    def add(index: int) -> None:
        binding = admin_pb2.AclBinding(principal=f"User:u{index}", resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
                                       pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL, resource_name="shared",
                                       operation=admin_pb2.ACL_OPERATION_CONSUME,
                                       permission=admin_pb2.ACL_PERMISSION_ALLOW)
        admin.CreateAcls(admin_pb2.CreateAclsRequest(bindings=[binding]), timeout=30)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    found = admin.DescribeAcls(admin_pb2.DescribeAclsRequest(), timeout=10).bindings
    assert sorted(b.principal for b in found) == ["User:u0", "User:u1", "User:u2"]


def wait_for(condition, what: str, deadline_s: float = WATCH_DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {deadline_s} s waiting for {what}"
        time.sleep(0.05)


def test_an_unreadable_acl_znode_keeps_the_bindings_already_loaded(cluster, replog, kazoo):
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    authorizer = Authorizer(())
    watcher = AclWatcher(zk, authorizer)
    try:
        replog("acls", "add", "--deny-principal", "User:alice", "--operation", "consume", "--topic", "orders")
        replog("acls", "add", "--allow-principal", "User:alice", "--operation", "all", "--topic", "*")
        watcher.start()
        assert not authorizer.authorize("User:alice", "consume", "topic", "orders")
        broken = schema.acl_resource_path("topic", "literal", "orders")
        kazoo.set(broken, b'{"version":1,"acls":"garbage"}')
        kazoo.set(schema.ACLS, schema.AclChangeMarker(1).encode())
        with pytest.raises(AssertionError, match="timed out"):  # the deny must not be dropped meanwhile
            wait_for(lambda: authorizer.authorize("User:alice", "consume", "topic", "orders"), "the deny to go",
                     deadline_s=2.0)
        code, _, err = replog("acls", "list")  # the gateway says what it cannot read
        assert code == 1 and broken in err and "(INTERNAL)" in err, err

        repaired = schema.AclResourceRecord((schema.AclEntry("User:alice", "consume", "deny"),
                                             schema.AclEntry("User:alice", "produce", "deny")))
        kazoo.set(broken, repaired.encode())
        kazoo.set(schema.ACLS, schema.AclChangeMarker(2).encode())
        wait_for(lambda: not authorizer.authorize("User:alice", "produce", "topic", "orders"), "the repaired read")
        assert not authorizer.authorize("User:alice", "consume", "topic", "orders")
    finally:
        watcher.stop()
        zk.stop()
