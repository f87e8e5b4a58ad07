"""Who may do what over the Kafka listener: a client certificate names a replog principal, and the
ACLs that hold on the gRPC port hold here (a user without them is refused per topic, and allowed once
an operator grants them); a client without a certificate is not served; an --insecure cluster serves
Kafka clients in plaintext; one identity holds a bounded share of the listener's connections, and idle
connections and silent handshakes are closed."""

from __future__ import annotations

import socket
import ssl
import struct
import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka.admin import AdminClient

from replog.common.security.principal import Principal
from replog.devcluster import ClusterSpec

from .broker_helpers import wait_for, wait_for_leader, zk_session
from .gateway_helpers import cli_runner
from .test_kafka_clients import consume_with_librdkafka, create, kafka_bootstrap, tls_config
from .tls_helpers import session_certificate

pytestmark = pytest.mark.integration

APPLY_DEADLINE_S = 30.0  # an ACL reaches every broker through one ZooKeeper watch
DELIVERY_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("kafka-security"))
    yield factory(ClusterSpec(controllers=1, brokers=1, gateways=1))
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


@pytest.fixture(scope="module")
def alice(tmp_path_factory) -> dict:
    files = session_certificate(Principal("user", "alice"), tmp_path_factory.mktemp("kafka-alice"))
    return {"security.protocol": "ssl", "ssl.ca.location": files.ca_file,
            "ssl.certificate.location": files.cert_file, "ssl.key.location": files.key_file}


def produce_one(cluster, settings: dict, topic: str) -> KafkaError | None:
    """The delivery error of one record (None: delivered)."""
    producer = KafkaProducer({"bootstrap.servers": kafka_bootstrap(cluster), **settings, "retries": 0,
                              "message.timeout.ms": 20000})
    outcome = []
    producer.produce(topic, b"v", on_delivery=lambda error, message: outcome.append(error))
    assert producer.flush(DELIVERY_DEADLINE_S) == 0
    return outcome[0]


def test_a_users_certificate_is_held_to_its_acls(cluster, replog, alice):
    create(replog, cluster, "kafka-guarded", partitions=1, replicas=1)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap(cluster), **alice})
    assert "kafka-guarded" not in admin.list_topics(timeout=10).topics  # not describable: trimmed
    refused = produce_one(cluster, alice, "kafka-guarded")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    code, _, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", "produce",
                          "--topic", "kafka-guarded")
    assert code == 0, err
    code, _, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", "describe",
                          "--topic", "kafka-guarded")
    assert code == 0, err
    wait_for(lambda: produce_one(cluster, alice, "kafka-guarded") is None, APPLY_DEADLINE_S,
             "alice's produce ACL to apply on the Kafka listener")
    assert "kafka-guarded" in admin.list_topics(timeout=10).topics
    assert [m.value() for m in consume_with_librdkafka(cluster, "kafka-guarded", 1, 1)] == [b"v"]  # as admin


def test_a_client_without_a_certificate_is_not_served(cluster):
    broker = cluster.of_role("broker")[0]
    with socket.create_connection((broker.host, broker.kafka_port), timeout=30) as connection:
        header = struct.pack(">hhih", 18, 0, 1, -1)  # a plaintext ApiVersions
        connection.sendall(struct.pack(">i", len(header)) + header)
        answer = b""
        try:
            while chunk := connection.recv(4096):
                answer += chunk
        except ConnectionResetError:
            pass  # the listener gave up on the handshake
        assert struct.pack(">i", 1) not in answer  # closed, the request never answered


def test_an_insecure_cluster_serves_kafka_clients_in_plaintext(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=1, insecure=True))
    replog = _insecure_cli(cluster)
    code, _, err = replog("topics", "create", "plain", "--partitions", "1", "--replication-factor", "1")
    assert code == 0, err
    with zk_session(cluster) as zk:
        wait_for_leader(cluster, zk, "plain", None, 60)
    assert produce_one(cluster, {}, "plain") is None
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap(cluster), "group.id": "plain"})
    try:
        consumer.assign([TopicPartition("plain", 0, 0)])
        deadline = time.monotonic() + 60
        while (message := consumer.poll(0.5)) is None or message.error() is not None:
            assert time.monotonic() < deadline, "no record read in plaintext"
        assert message.value() == b"v"
    finally:
        consumer.close()


def _insecure_cli(cluster):
    from replog.cli.main import main

    def run(*argv: str):
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["--gateway", cluster.gateway_address, "--insecure", *argv])
            except SystemExit as exc:
                code = exc.code
        return code, out.getvalue(), err.getvalue()

    return run


def test_a_users_produce_quota_throttles_its_kafka_client(cluster, replog, alice):
    create(replog, cluster, "kafka-quota", partitions=1, replicas=1)
    for operation in ("produce", "describe"):
        code, _, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", operation,
                              "--topic", "kafka-quota")
        assert code == 0, err
    code, _, err = replog("quotas", "alter", "--user", "alice", "--producer-byte-rate", "10000")
    assert code == 0, err
    throttles = []
    producer = KafkaProducer({"bootstrap.servers": kafka_bootstrap(cluster), **alice, "linger.ms": 0,
                              "throttle_cb": lambda event: throttles.append(event.throttle_time)})

    def throttled() -> bool:
        producer.produce("kafka-quota", b"x" * 20000)
        producer.flush(DELIVERY_DEADLINE_S)
        producer.poll(0)
        return bool(throttles)

    wait_for(throttled, APPLY_DEADLINE_S, "a throttle time in alice's produce answers on the Kafka listener")
    assert max(throttles) > 0


def test_a_user_creates_and_deletes_only_the_topics_its_acls_allow(cluster, replog, alice):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    def outcome(future) -> int | None:
        try:
            future.result(120)
        except KafkaException as exc:
            return exc.args[0].code()
        return None

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap(cluster), **alice})
    refused = admin.create_topics([NewTopic("kafka-alices", 1, 1)], request_timeout=120)["kafka-alices"]
    assert outcome(refused) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    code, listed, err = replog("topics", "list")
    assert code == 0 and "kafka-alices" not in listed.split(), err

    for operation in ("create", "delete"):
        code, _, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", operation,
                              "--topic", "kafka-alices")
        assert code == 0, err
    wait_for(lambda: outcome(admin.create_topics([NewTopic("kafka-alices", 1, 1)], request_timeout=120)[
        "kafka-alices"]) in (None, KafkaError.TOPIC_ALREADY_EXISTS), APPLY_DEADLINE_S,
        "alice's create ACL to apply on the Kafka listener")
    assert "kafka-alices" in replog("topics", "list")[1].split()
    create(replog, cluster, "kafka-not-alices", partitions=1, replicas=1)
    deleted = admin.delete_topics(["kafka-alices", "kafka-not-alices"], request_timeout=120)
    assert outcome(deleted["kafka-not-alices"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert outcome(deleted["kafka-alices"]) is None
    wait_for(lambda: "kafka-alices" not in replog("topics", "list")[1].split(), APPLY_DEADLINE_S,
             "kafka-alices deleted")
    assert "kafka-not-alices" in replog("topics", "list")[1].split()


def test_a_group_the_user_may_not_use_is_refused(cluster, replog, alice):
    from confluent_kafka import Consumer

    create(replog, cluster, "kafka-group-guarded", partitions=1, replicas=1)
    for operation in ("consume", "describe"):
        code, _, err = replog("acls", "add", "--allow-principal", "User:alice", "--operation", operation,
                              "--topic", "kafka-group-guarded")
        assert code == 0, err
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap(cluster), **alice, "group.id": "not-alices"})
    try:
        consumer.subscribe(["kafka-group-guarded"])
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, "no refusal of the group reached the consumer"
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                assert message.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED, message.error()
                break
    finally:
        consumer.close()


# --- connections: bounded per identity and in time -------------------------------------------------------

HELD_MAX = 4  # the bounded cluster's kafka_principal_connections_max
IDLE_MS = 3_000  # its kafka_connections_max_idle_ms
CLOSE_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def bounded(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("kafka-bounded"))
    yield factory(ClusterSpec(controllers=1, brokers=1, gateways=1, extra_args={"broker": [
        "--kafka-principal-connections-max", str(HELD_MAX), "--kafka-connections-max-idle-ms", str(IDLE_MS)]}))
    factory.teardown()


def _tls_connection(cluster, settings: dict) -> ssl.SSLSocket:
    broker = cluster.of_role("broker")[0]
    context = ssl.create_default_context(cafile=settings["ssl.ca.location"])
    context.check_hostname = False
    context.load_cert_chain(settings["ssl.certificate.location"], settings["ssl.key.location"])
    raw = socket.create_connection((broker.host, broker.kafka_port), timeout=CLOSE_DEADLINE_S)
    return context.wrap_socket(raw)


def _api_versions_answered(connection) -> bool:
    """Whether the listener answers an ApiVersions v0 on `connection` (False: it closed the connection)."""
    header = struct.pack(">hhih", 18, 0, 7, -1)
    try:
        connection.sendall(struct.pack(">i", len(header)) + header)
        size = _read(connection, 4)
        answer = _read(connection, struct.unpack(">i", size)[0]) if len(size) == 4 else b""
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        return False
    return len(answer) >= 4 and struct.unpack(">i", answer[:4])[0] == 7


def _read(connection, size: int) -> bytes:
    """`size` bytes, or fewer when the connection ends first."""
    data = b""
    while len(data) < size and (chunk := connection.recv(size - len(data))):
        data += chunk
    return data


def _closed_by_listener(connection) -> bool:
    """Waits (up to the socket's timeout) for the listener to close a connection that sends nothing."""
    try:
        return connection.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def test_one_identity_holds_at_most_its_share_of_kafka_connections_and_the_operator_still_gets_in(bounded, alice):
    held = [_tls_connection(bounded, alice) for _ in range(HELD_MAX)]
    try:
        assert all(_api_versions_answered(c) for c in held)
        with _tls_connection(bounded, alice) as over:
            assert not _api_versions_answered(over)
        operator = {**tls_config(), "client.id": "operator"}
        AdminClient({"bootstrap.servers": kafka_bootstrap(bounded), **operator}).list_topics(timeout=30)
    finally:
        for connection in held:
            connection.close()
    # Once they end, the identity's connections are given back.
    wait_for(lambda: _api_versions_answered(_tls_connection(bounded, alice)), CLOSE_DEADLINE_S,
             "alice's closed connections to be given back")


def test_an_idle_kafka_connection_and_a_silent_handshake_are_closed(bounded, alice):
    idle = _tls_connection(bounded, alice)
    with idle:
        assert _api_versions_answered(idle)
        started = time.monotonic()
        assert _closed_by_listener(idle)  # no request for IDLE_MS
        assert time.monotonic() - started >= IDLE_MS / 1000 * 0.9
    broker = bounded.of_role("broker")[0]
    with socket.create_connection((broker.host, broker.kafka_port), timeout=CLOSE_DEADLINE_S) as silent:
        assert _closed_by_listener(silent)  # a TCP connection that never starts its handshake
