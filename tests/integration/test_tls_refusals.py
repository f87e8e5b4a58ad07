"""A secure cluster refuses callers it cannot trust, and callers calling what is not theirs, before
anything runs: no certificate (plaintext, or TLS without one), an expired certificate, one from
another CA, one naming nobody; a broker commanding a broker as if it were the controller (the
issue's attack: LeaderAndIsr with controller_epoch 2**31-1 and init, which would make the broker
drop every replica), a user fetching as a replica, a broker proposing ISR changes as another.

After each, nothing changed: broker 1's log directory (every file and its size), the partition's
state in ZooKeeper (bytes and version) and both replicas, as the brokers describe them.

Refusals at the handshake (no certificate, expired, foreign CA) never reach a call: the client sees
UNAVAILABLE and the server's gRPC library logs the handshake failure with its reason. Refusals of a
call are UNAUTHENTICATED or PERMISSION_DENIED, logged once by replog with the caller's identity.
"""

from __future__ import annotations

import datetime

import grpc
import pytest

from replog.common.security import local
from replog.common.security.certificates import issue, load_authority, new_authority
from replog.common.security.credentials import open_channel
from replog.common.security.files import TlsFiles
from replog.common.security.principal import Principal
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import (
    broker_control_pb2,
    broker_control_pb2_grpc,
    controller_pb2,
    controller_pb2_grpc,
    replication_pb2,
    replication_pb2_grpc,
)

from .broker_helpers import (
    batch_of,
    create_topic,
    describe,
    produce_raw,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)
from .tls_helpers import channel_as

pytestmark = pytest.mark.integration

TOPIC = "guarded"
ATTACK = broker_control_pb2.LeaderAndIsrRequest(controller_id=1, controller_epoch=2147483647, init=True, partitions=[])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("tls-refusals"))
    cluster = factory(ClusterSpec(controllers=1, brokers=3, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1, 2)})
        wait_for_leader(cluster, zk, TOPIC, 1, 30, followers=(2,))
        wait_for_isr(cluster, zk, TOPIC, {1, 2}, 30)
    assert produce_raw(cluster, 1, TOPIC, batch_of([b"kept-1", b"kept-2"])).error_code == 0
    wait_caught_up(cluster, (1, 2), TOPIC, 2, 10)
    yield cluster
    factory.teardown()


def snapshot(cluster) -> tuple:
    log_dir = cluster.data_dir("broker-1")
    files = sorted((str(p.relative_to(log_dir)), p.stat().st_size) for p in log_dir.rglob("*")
                   if p.is_file() and "checkpoint" not in p.name)  # checkpoints are rewritten on a timer
    with zk_session(cluster) as zk:
        data, stat = zk.get(schema.partition_state_path(TOPIC, 0))
    replicas = [(d.log_end_offset, d.high_watermark, d.size_bytes) if d else None
                for d in (describe(cluster, b, TOPIC) for b in (1, 2))]
    return files, data, stat.version, replicas


@pytest.fixture
def unchanged(cluster):
    before = snapshot(cluster)
    assert None not in before[3], "both replicas are there before the test"
    yield
    assert snapshot(cluster) == before


def log_lines(cluster, name: str, needle: str) -> list[str]:
    return [line for line in cluster.log_path(name).read_text(errors="replace").splitlines() if needle in line]


def wait_logged(cluster, name: str, needle: str, count_before: int) -> list[str]:
    wait_for(lambda: len(log_lines(cluster, name, needle)) > count_before, 10, f"{name} to log {needle!r}")
    return log_lines(cluster, name, needle)[count_before:]


def assert_refused_at_handshake(cluster, channel: grpc.Channel, reason: str) -> None:
    """The attack on broker 1 fails to connect, and broker 1 logs why."""
    before = len(log_lines(cluster, "broker-1", "Handshake failed"))
    with channel, pytest.raises(grpc.RpcError) as refused:
        broker_control_pb2_grpc.BrokerControlServiceStub(channel).LeaderAndIsr(ATTACK, timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    logged = wait_logged(cluster, "broker-1", "Handshake failed", before)
    assert any(reason in line for line in logged), logged


def certificate(cluster, tmp_path, principal: Principal, **kwargs) -> TlsFiles:
    """A certificate of `principal` signed by the cluster's CA."""
    return issue(load_authority(local.tls_dir(cluster.state_dir)), principal, tmp_path, **kwargs)


def broker_1(cluster) -> str:
    return cluster.processes["broker-1"].address


# --- refused at the handshake ----------------------------------------------------------------


def test_plaintext_is_refused(cluster, unchanged):
    assert_refused_at_handshake(cluster, grpc.insecure_channel(broker_1(cluster)), "WRONG_VERSION_NUMBER")


def test_tls_without_a_client_certificate_is_refused(cluster, unchanged):
    ca = cluster.operator_tls.read().ca
    channel = grpc.secure_channel(broker_1(cluster), grpc.ssl_channel_credentials(root_certificates=ca))
    assert_refused_at_handshake(cluster, channel, "PEER_DID_NOT_RETURN_A_CERTIFICATE")


def test_an_expired_certificate_is_refused(cluster, unchanged, tmp_path):
    long_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=30)
    expired = certificate(cluster, tmp_path, Principal("controller", "1"), valid_from=long_ago,
                          valid_until=long_ago + datetime.timedelta(days=1))
    assert_refused_at_handshake(cluster, open_channel(broker_1(cluster), expired), "certificate has expired")


def test_a_certificate_from_another_ca_is_refused(cluster, unchanged, tmp_path):
    other = new_authority(tmp_path / "other-ca", "another cluster's CA")
    foreign = issue(other, Principal("controller", "1"), tmp_path)
    foreign = TlsFiles(cluster.operator_tls.ca_file, foreign.cert_file, foreign.key_file)  # trusts our servers
    assert_refused_at_handshake(cluster, open_channel(broker_1(cluster), foreign), "CERTIFICATE_VERIFY_FAILED")


# --- refused at the call ---------------------------------------------------------------------


def refused_call(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    return refused.value


def test_a_certificate_naming_nobody_is_unauthenticated(cluster, unchanged, tmp_path):
    nobody = certificate(cluster, tmp_path, Principal("controller", "1"), with_identity=False)
    needle = "refused /replog.v1.BrokerControlService/LeaderAndIsr from a peer without identity"
    before = len(log_lines(cluster, "broker-1", needle))
    with open_channel(broker_1(cluster), nobody) as channel:
        error = refused_call(lambda: broker_control_pb2_grpc.BrokerControlServiceStub(channel).LeaderAndIsr(
            ATTACK, timeout=5))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "client certificate" in error.details() and "--tls-cert-file" in error.details()
    assert "127.0.0.1" in wait_logged(cluster, "broker-1", needle, before)[0]


def test_a_broker_cannot_command_a_broker(cluster, unchanged):
    """The issue's attack, from broker 2's own certificate: refused twice, logged once, nothing dropped."""
    needle = "refused /replog.v1.BrokerControlService/LeaderAndIsr from broker:2"
    before = len(log_lines(cluster, "broker-1", needle))
    with channel_as(cluster, Principal("broker", "2"), broker_1(cluster)) as channel:
        stub = broker_control_pb2_grpc.BrokerControlServiceStub(channel)
        for _ in range(2):
            error = refused_call(lambda: stub.LeaderAndIsr(ATTACK, timeout=5))
            assert error.code() == grpc.StatusCode.PERMISSION_DENIED
            assert error.details() == ("broker:2 may not call /replog.v1.BrokerControlService/LeaderAndIsr: "
                                       "only the controller may")
    logged = wait_logged(cluster, "broker-1", needle, before)
    assert len(logged) == 1, logged  # once per (principal, method, reason)
    assert "ipv4:127.0.0.1:" in logged[0]


def test_a_user_cannot_fetch_as_a_replica(cluster, unchanged, tmp_path):
    mallory = certificate(cluster, tmp_path, Principal("user", "mallory"))
    request = replication_pb2.ReplicaFetchRequest(replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                                  partitions=[replication_pb2.ReplicaFetchPartition(
                                                      topic=TOPIC, partition=0, fetch_offset=0,
                                                      last_fetched_epoch=-1)])
    needle = "refused /replog.v1.ReplicationService/ReplicaFetch from User:mallory"
    before = len(log_lines(cluster, "broker-1", needle))
    with open_channel(broker_1(cluster), mallory) as channel:
        error = refused_call(lambda: replication_pb2_grpc.ReplicationServiceStub(channel).ReplicaFetch(
            request, timeout=5))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "only brokers may" in error.details()
    wait_logged(cluster, "broker-1", needle, before)


def test_a_broker_cannot_fetch_as_another_on_a_stream(cluster, unchanged):
    fetch = replication_pb2.ReplicaFetchStreamRequest(fetch=replication_pb2.ReplicaFetchRequest(
        replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
        partitions=[replication_pb2.ReplicaFetchPartition(topic=TOPIC, partition=0, fetch_offset=0,
                                                          last_fetched_epoch=-1)]))
    with channel_as(cluster, Principal("broker", "3"), broker_1(cluster)) as channel:
        stub = replication_pb2_grpc.ReplicationServiceStub(channel)
        error = refused_call(lambda: list(stub.ReplicaFetchStream(iter([fetch]), timeout=5)))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "for broker 2: a broker speaks only for itself" in error.details()


def test_a_broker_cannot_alter_a_partition_as_another(cluster, unchanged):
    """Broker 1 (the leader) proposes, as broker 2, to shrink the ISR to broker 2 alone."""
    controller = cluster.processes["controller-1"].address
    with zk_session(cluster) as zk:
        _, stat = zk.get(schema.partition_state_path(TOPIC, 0))
    request = controller_pb2.AlterPartitionRequest(broker_id=2, partitions=[controller_pb2.AlterPartitionItem(
        topic=TOPIC, partition=0, leader_epoch=describe(cluster, 1, TOPIC).leader_epoch, new_isr=[2],
        partition_epoch=stat.version)])
    needle = "refused /replog.v1.ControllerService/AlterPartition from broker:1"
    before = len(log_lines(cluster, "controller-1", needle))
    with channel_as(cluster, Principal("broker", "1"), controller) as channel:
        error = refused_call(lambda: controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(
            request, timeout=5))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "broker:1 may not call /replog.v1.ControllerService/AlterPartition for broker 2" in error.details()
    assert "speaks for another broker" in wait_logged(cluster, "controller-1", needle, before)[0]
