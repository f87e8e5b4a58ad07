"""Client quotas administered through the gateway: `replog quotas alter|describe` and the API, what lands in
ZooKeeper, the refusals of bad requests (nothing written), who may alter and describe, and a watcher that
follows every change and keeps the last good quotas when ZooKeeper holds one it cannot read."""

from __future__ import annotations

import json
import threading
import time

import grpc
import pytest

from replog.common.channels import CHANNEL_OPTIONS
from replog.common.quotas.core.model import QuotaRecord, QuotaSnapshot
from replog.common.quotas.store import QuotaWatcher
from replog.common.security.credentials import open_channel
from replog.common.security.principal import Principal
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc

from .gateway_helpers import cli_runner, kazoo_client, running_cluster
from .tls_helpers import session_certificate

pytestmark = pytest.mark.integration

WATCH_DEADLINE_S = 10.0
P, C = admin_pb2.CLIENT_QUOTA_TYPE_PRODUCER_BYTE_RATE, admin_pb2.CLIENT_QUOTA_TYPE_CONSUMER_BYTE_RATE


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec(controllers=0, brokers=1, gateways=1)
    yield from running_cluster(tmp_path_factory.mktemp("quotas-admin"), spec)


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
def no_quotas_left(admin):
    yield
    entries = admin.DescribeClientQuotas(admin_pb2.DescribeClientQuotasRequest(), timeout=10).entries
    if entries:
        admin.AlterClientQuotas(admin_pb2.AlterClientQuotasRequest(alterations=[
            admin_pb2.ClientQuotaAlteration(entity=e.entity, ops=[admin_pb2.ClientQuotaOp(type=P, remove=True),
                                                                  admin_pb2.ClientQuotaOp(type=C, remove=True)])
            for e in entries]), timeout=10)


def described(replog, *argv) -> dict:
    code, out, err = replog("-o", "json", "quotas", "describe", *argv)
    assert code == 0, err
    return json.loads(out)


def quota(entity: str, produce: int | None = None, consume: int | None = None) -> dict:
    return {"entity": entity, "producer_byte_rate": produce, "consumer_byte_rate": consume}


def stored(kazoo) -> dict[str, bytes]:
    if not kazoo.exists(schema.QUOTA_USERS):
        return {}
    return {node: kazoo.get(f"{schema.QUOTA_USERS}/{node}")[0] for node in kazoo.get_children(schema.QUOTA_USERS)}


def test_alter_describe_and_delete_round_trip(replog, kazoo):
    code, out, err = replog("quotas", "alter", "--user", "alice", "--producer-byte-rate", "1048576",
                            "--consumer-byte-rate", "2097152")
    assert code == 0 and out.split("\n")[:3] == [
        "Altered the quotas of User:alice; now:",
        "ENTITY      PRODUCER_BYTE_RATE  CONSUMER_BYTE_RATE",
        "User:alice  1048576             2097152"], out
    code, out, err = replog("-o", "json", "quotas", "alter", "--default", "--producer-byte-rate", "10485760")
    assert code == 0 and json.loads(out) == {"quotas": [quota("default", produce=10485760)]}, err
    replog("quotas", "alter", "--user", "User:ops.team", "--consumer-byte-rate", "500")

    assert described(replog) == {"quotas": [quota("default", produce=10485760),
                                            quota("User:alice", 1048576, 2097152),
                                            quota("User:ops.team", consume=500)]}
    assert described(replog, "--user", "ops.team") == {"quotas": [quota("User:ops.team", consume=500)],
                                                       "effective": quota("User:ops.team", 10485760, 500)}
    code, out, _ = replog("quotas", "describe", "--user", "bob")
    assert out.split("\n")[:2] == [
        "User:bob is held on each broker to: producer_byte_rate 10485760 bytes/s (its own quotas, else the "
        "default's).", "No quotas match."], out
    assert json.loads(stored(kazoo)["alice"]) == {"version": 1, "producer_byte_rate": 1048576,
                                                  "consumer_byte_rate": 2097152}
    assert set(stored(kazoo)) == {"alice", "ops.team", "<default>"}

    code, out, _ = replog("-o", "json", "quotas", "alter", "--user", "alice", "--delete-config", "producer_byte_rate")
    assert json.loads(out) == {"quotas": [quota("User:alice", consume=2097152)]}
    replog("quotas", "alter", "--user", "alice", "--delete-config", "consumer_byte_rate,producer_byte_rate")
    assert "alice" not in stored(kazoo)  # gone with its last quota
    assert described(replog, "--user", "alice") == {"quotas": [], "effective": quota("User:alice", produce=10485760)}


@pytest.mark.parametrize("argv, words", [
    (["--user", "alice", "--producer-byte-rate", "0"], "producer_byte_rate 0 is out of range"),
    (["--user", "alice", "--consumer-byte-rate", str(2**53)], "consumer_byte_rate 9007199254740992 is out of range"),
    (["--user", "*", "--producer-byte-rate", "5"], "User:* is not one user"),
    (["--user", "", "--producer-byte-rate", "5"], "principal 'User:' is not of the form User:<name>"),
    (["--user", "al\x01ice", "--producer-byte-rate", "5"], "control character"),
])
def test_bad_quotas_are_refused_with_the_reason_and_nothing_is_stored(replog, kazoo, argv, words):
    replog("quotas", "alter", "--user", "bob", "--producer-byte-rate", "100")
    before = stored(kazoo)
    code, _, err = replog("quotas", "alter", *argv)
    assert code == 1 and words in err and "(INVALID_ARGUMENT)" in err and "nothing was changed" in err, err
    assert stored(kazoo) == before


@pytest.mark.parametrize("argv, words", [
    (["alter", "--user", "a", "--delete-config", "request_percentage"], "--delete-config takes producer_byte_rate"),
    (["alter", "--user", "a"], "give --producer-byte-rate, --consumer-byte-rate or --delete-config"),
    (["alter", "--producer-byte-rate", "5"], "one of the arguments --user --default is required"),
    (["alter", "--user", "a", "--default", "--producer-byte-rate", "5"], "not allowed with argument"),
])
def test_a_malformed_command_line_is_a_usage_error(replog, argv, words):
    code, _, err = replog("quotas", *argv)
    assert code == 2 and words in err, err


def test_the_api_refuses_a_request_whole_naming_the_part_at_fault(admin, kazoo):
    def alter(*alterations) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as refused:
            admin.AlterClientQuotas(admin_pb2.AlterClientQuotasRequest(alterations=alterations), timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        return refused.value.details()

    alice = admin_pb2.ClientQuotaEntity(principal="User:alice")
    good = admin_pb2.ClientQuotaAlteration(entity=alice, ops=[admin_pb2.ClientQuotaOp(type=P, value=100)])
    assert "needs at least one alteration" in alter()
    assert "not both" in alter(admin_pb2.ClientQuotaAlteration(
        entity=admin_pb2.ClientQuotaEntity(principal="User:a", default_user=True),
        ops=[admin_pb2.ClientQuotaOp(type=P, value=1)]))
    assert "alteration 1 (User:alice): the entity is altered twice" in alter(good, good)
    assert "alteration 1 (the default), op 0: no quota type" in alter(good, admin_pb2.ClientQuotaAlteration(
        entity=admin_pb2.ClientQuotaEntity(default_user=True), ops=[admin_pb2.ClientQuotaOp(value=1)]))
    assert "ops[0].type: 7 is no value of ClientQuotaType" in alter(admin_pb2.ClientQuotaAlteration(
        entity=alice, ops=[admin_pb2.ClientQuotaOp(type=7, value=1)]))  # refused at the edge, naming the field
    assert "a removal of consumer_byte_rate takes no value (found 3)" in alter(admin_pb2.ClientQuotaAlteration(
        entity=alice, ops=[admin_pb2.ClientQuotaOp(type=C, value=3, remove=True)]))
    assert "no op" in alter(admin_pb2.ClientQuotaAlteration(entity=alice))
    assert stored(kazoo) == {}  # the good alteration of each request was not written either
    with pytest.raises(grpc.RpcError) as refused:
        admin.DescribeClientQuotas(admin_pb2.DescribeClientQuotasRequest(entity=admin_pb2.ClientQuotaEntity()),
                                   timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "name a user" in refused.value.details()


def test_altering_needs_cluster_admin_and_describing_needs_describe(cluster, replog, tmp_path):
    files = session_certificate(Principal("user", "carol"), tmp_path)
    with open_channel(cluster.gateway_address, files) as channel:
        carol = admin_pb2_grpc.AdminServiceStub(channel)
        alter = admin_pb2.AlterClientQuotasRequest(alterations=[admin_pb2.ClientQuotaAlteration(
            entity=admin_pb2.ClientQuotaEntity(principal="User:carol"),
            ops=[admin_pb2.ClientQuotaOp(type=P, value=1)])])
        for call in (lambda: carol.AlterClientQuotas(alter, timeout=10),
                     lambda: carol.DescribeClientQuotas(admin_pb2.DescribeClientQuotasRequest(), timeout=10)):
            with pytest.raises(grpc.RpcError) as refused:
                call()
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "User:carol" in refused.value.details() and "'replog-cluster'" in refused.value.details()
        replog("acls", "add", "--allow-principal", "User:carol", "--operation", "describe", "--cluster")
        try:
            deadline = time.monotonic() + WATCH_DEADLINE_S
            while True:
                try:
                    carol.DescribeClientQuotas(admin_pb2.DescribeClientQuotasRequest(), timeout=10)
                    break
                except grpc.RpcError as exc:
                    assert exc.code() == grpc.StatusCode.PERMISSION_DENIED and time.monotonic() < deadline, exc
                time.sleep(0.1)
            with pytest.raises(grpc.RpcError) as refused:
                carol.AlterClientQuotas(alter, timeout=10)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "cluster_admin" in refused.value.details()
        finally:
            replog("acls", "remove", "--cluster")
    assert described(replog) == {"quotas": []}


def wait_for(condition, what: str, deadline_s: float = WATCH_DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {deadline_s} s waiting for {what}"
        time.sleep(0.05)


class Seen:
    def __init__(self) -> None:
        self.snapshot = None

    def __call__(self, snapshot: QuotaSnapshot) -> None:
        self.snapshot = snapshot


def test_a_watcher_follows_every_change_and_keeps_the_last_good_quotas(cluster, replog, kazoo):
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    seen = Seen()
    watcher = QuotaWatcher(zk, seen)
    try:
        watcher.start()
        assert seen.snapshot == QuotaSnapshot()
        replog("quotas", "alter", "--user", "alice", "--producer-byte-rate", "1000")
        wait_for(lambda: seen.snapshot.rate("producer_byte_rate", "User:alice") == 1000, "alice's quota")
        replog("quotas", "alter", "--default", "--consumer-byte-rate", "2000")
        wait_for(lambda: seen.snapshot.rate("consumer_byte_rate", "User:alice") == 2000, "the default")

        broken = schema.quota_user_path("User:alice")
        kazoo.set(broken, b'{"version":1,"producer_byte_rate":-4}')
        kazoo.set(schema.QUOTAS, schema.QuotaChangeMarker(1).encode())
        with pytest.raises(AssertionError, match="timed out"):  # the quota must not be dropped meanwhile
            wait_for(lambda: seen.snapshot.rate("producer_byte_rate", "User:alice") != 1000, "the quota to go",
                     deadline_s=2.0)
        code, _, err = replog("quotas", "describe")  # the gateway says what it cannot read
        assert code == 1 and broken in err and "(INTERNAL)" in err, err

        kazoo.set(broken, QuotaRecord(producer_byte_rate=3000).encode())
        kazoo.set(schema.QUOTAS, schema.QuotaChangeMarker(2).encode())
        wait_for(lambda: seen.snapshot.rate("producer_byte_rate", "User:alice") == 3000, "the repaired read")
    finally:
        watcher.stop()
        zk.stop()


def test_concurrent_alters_all_land(admin):
    def alter(index: int) -> None:
        admin.AlterClientQuotas(admin_pb2.AlterClientQuotasRequest(alterations=[admin_pb2.ClientQuotaAlteration(
            entity=admin_pb2.ClientQuotaEntity(principal=f"User:u{index}"),
            ops=[admin_pb2.ClientQuotaOp(type=P, value=100 + index)])]), timeout=30)

    threads = [threading.Thread(target=alter, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    entries = admin.DescribeClientQuotas(admin_pb2.DescribeClientQuotasRequest(), timeout=10).entries
    assert [(e.entity.principal, e.producer_byte_rate) for e in entries] == [
        ("User:u0", 100), ("User:u1", 101), ("User:u2", 102)]
