"""Kafka clients against the brokers' Kafka listeners (broker/kafka/), on a real cluster (a
controller, three brokers, a gateway) with TLS: librdkafka (confluent-kafka, kcat) and kafka-python
negotiate versions, read metadata that names the Kafka listeners, produce (idempotent, compressed,
keyed: each key on the partition Kafka's murmur2 partitioner picks) and consume; what a Kafka client
writes reads identically through replog's own consumer and the other way round; an API the listener
does not serve is answered, not dropped; admin clients (librdkafka, kafka-python) create and delete
topics as the gateway does, a refusal answered per topic with Kafka's code."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import time

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from replog.client import Consumer, Producer
from replog.client.partitioner import partition_for_key
from replog.common.security import local
from replog.devcluster import ClusterSpec

from .broker_helpers import wait_for, wait_for_leader, zk_session
from .gateway_helpers import cli_runner

pytestmark = pytest.mark.integration

LEADER_DEADLINE_S = 60.0
DELIVERY_DEADLINE_S = 60.0
READ_DEADLINE_S = 60.0
T0_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("kafka-clients"))
    yield factory(ClusterSpec(controllers=1, brokers=3, gateways=1))
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def kafka_bootstrap(cluster) -> str:
    return ",".join(f"{p.host}:{p.kafka_port}" for p in cluster.of_role("broker"))


def grpc_bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def tls_config() -> dict:
    """librdkafka's settings for the operator's certificate (the session's, from the environment)."""
    return {"security.protocol": "ssl", "ssl.ca.location": os.environ[local.ENV_CA],
            "ssl.certificate.location": os.environ[local.ENV_CERT], "ssl.key.location": os.environ[local.ENV_KEY]}


def create(replog, cluster, topic: str, partitions: int = 3, replicas: int = 3) -> None:
    code, _, err = replog("topics", "create", topic, "--partitions", str(partitions), "--replication-factor",
                          str(replicas))
    assert code == 0, err
    with zk_session(cluster) as zk:
        for partition in range(partitions):
            wait_for_leader(cluster, zk, topic, None, LEADER_DEADLINE_S, partition)


def kafka_partition(key: bytes, partitions: int) -> int:
    return partition_for_key(key, partitions)


def produce_with_librdkafka(cluster, topic: str, records, **settings) -> list:
    """Send `records` (key, value, headers, timestamp) and wait for every delivery report."""
    producer = KafkaProducer({"bootstrap.servers": kafka_bootstrap(cluster), **tls_config(), **settings})
    delivered, failed = [], []

    def report(error, message):
        (failed if error else delivered).append(error or message)

    for key, value, headers, timestamp_ms in records:
        producer.produce(topic, value=value, key=key, headers=headers, timestamp=timestamp_ms, on_delivery=report)
    left = producer.flush(DELIVERY_DEADLINE_S)
    assert left == 0 and not failed, f"{left} undelivered, failures: {failed[:3]}"
    return delivered


def consume_with_librdkafka(cluster, topic: str, partitions: int, count: int) -> list:
    consumer = KafkaConsumer({"bootstrap.servers": kafka_bootstrap(cluster), **tls_config(),
                              "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(partitions)])
        got = []
        deadline = time.monotonic() + READ_DEADLINE_S
        while len(got) < count:
            assert time.monotonic() < deadline, f"read {len(got)} of {count} records of {topic}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(message)
        return got
    finally:
        consumer.close()


def read_with_replog(cluster, topic: str, count: int) -> list:
    with Consumer(grpc_bootstrap(cluster), topic) as consumer:
        records: list = []
        deadline = time.monotonic() + READ_DEADLINE_S
        while len(records) < count:
            assert time.monotonic() < deadline, f"read {len(records)} of {count} records of {topic} over gRPC"
            records += consumer.poll(500)
        return records


def test_metadata_names_the_kafka_listeners_and_every_partition(cluster, replog):
    create(replog, cluster, "kafka-metadata")
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap(cluster), **tls_config()})

    def described():
        found = admin.list_topics(timeout=10)
        topic = found.topics.get("kafka-metadata")
        return found if topic is not None and topic.error is None and len(topic.partitions) == 3 else None

    found = wait_for(described, LEADER_DEADLINE_S, "metadata of kafka-metadata through the Kafka listener")
    brokers = {b.id: (b.host, b.port) for b in found.brokers.values()}
    assert brokers == {p.instance_id: (p.host, p.kafka_port) for p in cluster.of_role("broker")}
    for partition in found.topics["kafka-metadata"].partitions.values():
        assert partition.leader in brokers and sorted(partition.replicas) == [1, 2, 3]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_produces_idempotent_compressed_keyed_records_replog_reads_identically(cluster, replog, codec):
    """Every codec librdkafka writes (snappy raw, lz4 as a frame) is read back by replog's consumer."""
    topic = f"kafka-in-{codec}"
    create(replog, cluster, topic)
    records = [(f"key-{i}".encode(), f"value-{i}".encode() * 20, [("n", str(i).encode())], T0_MS + i)
               for i in range(300)]
    delivered = produce_with_librdkafka(cluster, topic, records, **{
        "enable.idempotence": True, "acks": "all", "compression.type": codec, "partitioner": "murmur2_random",
        "linger.ms": 20})
    for message in delivered:
        assert message.partition() == kafka_partition(message.key(), 3)
    read = read_with_replog(cluster, topic, len(records))
    by_key = {r.key: r for r in read}
    assert len(by_key) == len(records)
    for key, value, headers, timestamp_ms in records:
        record = by_key[key]
        assert (record.value, record.headers, record.timestamp_ms) == (value, tuple(headers), timestamp_ms)
        assert record.partition == kafka_partition(key, 3)
    offsets = {(m.partition(), m.offset()) for m in delivered}
    assert offsets == {(r.partition, r.offset) for r in read}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_what_replog_writes_librdkafka_reads_identically(cluster, replog, codec):
    topic = f"replog-out-{codec}"
    create(replog, cluster, topic, partitions=1)
    with Producer(grpc_bootstrap(cluster), compression_type=codec) as producer:
        for i in range(50):
            producer.send(topic, f"v{i}".encode() * 10, key=None if i % 2 else f"k{i}".encode(),
                          headers=[("h", b"x"), ("none", None)] if i % 3 == 0 else None, timestamp_ms=T0_MS + i)
        producer.flush(30)
    got = consume_with_librdkafka(cluster, topic, 1, 50)
    assert [m.offset() for m in got] == list(range(50))
    for i, message in enumerate(got):
        assert message.value() == f"v{i}".encode() * 10
        assert message.key() == (None if i % 2 else f"k{i}".encode())
        assert message.timestamp()[1] == T0_MS + i
        assert (message.headers() or None) == ([("h", b"x"), ("none", None)] if i % 3 == 0 else None)


def test_tombstones_cross_between_kafka_clients_and_replog(cluster, replog):
    """A null value is a tombstone on both sides: librdkafka's reads back as None through the gRPC
    consumer, and the replog Producer's through librdkafka."""
    create(replog, cluster, "kafka-tombstones", partitions=1)
    produce_with_librdkafka(cluster, "kafka-tombstones", [(b"kept", b"v", None, T0_MS), (b"gone", None, None, T0_MS)])
    with Producer(grpc_bootstrap(cluster)) as producer:
        producer.send("kafka-tombstones", None, key=b"kept", timestamp_ms=T0_MS + 1)
        producer.flush(30)
    assert [(r.key, r.value) for r in read_with_replog(cluster, "kafka-tombstones", 3)] == [
        (b"kept", b"v"), (b"gone", None), (b"kept", None)]
    assert [(m.key(), m.value()) for m in consume_with_librdkafka(cluster, "kafka-tombstones", 1, 3)] == [
        (b"kept", b"v"), (b"gone", None), (b"kept", None)]


def kafka_python_tls() -> dict:
    return {"security_protocol": "SSL", "ssl_cafile": os.environ[local.ENV_CA],
            "ssl_certfile": os.environ[local.ENV_CERT], "ssl_keyfile": os.environ[local.ENV_KEY]}


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_produces_idempotently_and_consumes(cluster, replog, codec):
    """kafka-python writes snappy in the xerial framing (the Java client's), the others as librdkafka."""
    from kafka import KafkaConsumer as PyConsumer
    from kafka import KafkaProducer as PyProducer
    from kafka import TopicPartition as PyTopicPartition

    topic = f"kafka-python-{codec}"
    create(replog, cluster, topic)
    ssl = kafka_python_tls()
    producer = PyProducer(bootstrap_servers=kafka_bootstrap(cluster).split(","), acks="all",
                          enable_idempotence=True, compression_type=codec, linger_ms=10, **ssl)
    try:
        futures = [producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode() * 30) for i in range(100)]
        producer.flush(DELIVERY_DEADLINE_S)
        sent = [f.get(DELIVERY_DEADLINE_S) for f in futures]
    finally:
        producer.close()
    for i, metadata in enumerate(sent):
        assert metadata.partition == kafka_partition(f"k{i}".encode(), 3)
    consumer = PyConsumer(bootstrap_servers=kafka_bootstrap(cluster).split(","), enable_auto_commit=False,
                          auto_offset_reset="earliest", **ssl)
    try:
        consumer.assign([PyTopicPartition(topic, p) for p in range(3)])
        got = {}
        deadline = time.monotonic() + READ_DEADLINE_S
        while len(got) < 100:
            assert time.monotonic() < deadline, f"kafka-python read {len(got)} of 100"
            for records in consumer.poll(timeout_ms=500).values():
                got.update({r.key: (r.partition, r.offset, r.value) for r in records})
    finally:
        consumer.close()
    assert {k: v[2] for k, v in got.items()} == {f"k{i}".encode(): f"v{i}".encode() * 30 for i in range(100)}
    assert {(v[0], v[1]) for v in got.values()} == {(m.partition, m.offset) for m in sent}


def test_kcat_lists_produces_and_consumes(cluster, replog, tmp_path):
    create(replog, cluster, "kafka-kcat", partitions=1)
    flags = ["-b", kafka_bootstrap(cluster), "-X", "security.protocol=ssl", "-X",
             f"ssl.ca.location={os.environ[local.ENV_CA]}", "-X",
             f"ssl.certificate.location={os.environ[local.ENV_CERT]}", "-X",
             f"ssl.key.location={os.environ[local.ENV_KEY]}"]
    listed = subprocess.run(["kcat", *flags, "-L", "-t", "kafka-kcat"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert 'topic "kafka-kcat" with 1 partitions' in listed.stdout
    produced = subprocess.run(["kcat", *flags, "-P", "-t", "kafka-kcat", "-K:"], input="a:one\nb:two\n",
                              capture_output=True, text=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(["kcat", *flags, "-C", "-t", "kafka-kcat", "-o", "beginning", "-e", "-f", "%k=%s@%o\n"],
                              capture_output=True, text=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == ["a=one@0", "b=two@1"]
    assert [(r.key, r.value) for r in read_with_replog(cluster, "kafka-kcat", 2)] == [(b"a", b"one"), (b"b", b"two")]


def test_an_api_not_served_is_answered_and_the_connection_stays_open(cluster):
    import ssl

    broker = cluster.of_role("broker")[0]
    context = ssl.create_default_context(cafile=os.environ[local.ENV_CA])
    context.load_cert_chain(os.environ[local.ENV_CERT], os.environ[local.ENV_KEY])
    context.check_hostname = False
    with socket.create_connection((broker.host, broker.kafka_port), timeout=30) as raw, \
            context.wrap_socket(raw) as connection:
        def call(api_key: int, version: int, correlation_id: int, body: bytes = b"") -> bytes:
            header = struct.pack(">hhih", api_key, version, correlation_id, -1)
            connection.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
            (size,) = struct.unpack(">i", _read(connection, 4))
            return _read(connection, size)

        answer = call(57, 0, 11)  # UpdateFeatures: not served
        assert struct.unpack_from(">ih", answer) == (11, 35)  # UNSUPPORTED_VERSION
        answer = call(18, 9, 12)  # an ApiVersions newer than offered: the offered versions, in v0's layout
        correlation_id, error_code, count = struct.unpack_from(">ihi", answer)
        assert (correlation_id, error_code) == (12, 35) and count >= 18
        answer = call(18, 0, 13)  # the same connection still answers
        assert struct.unpack_from(">ih", answer) == (13, 0)


def _read(connection, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        assert chunk, "the listener closed the connection"
        data += chunk
    return data


def test_describe_cluster_and_topic_configs(cluster, replog):
    from confluent_kafka.admin import ConfigResource

    code, _, err = replog("topics", "create", "kafka-configured", "--partitions", "1", "--replication-factor", "3",
                          "--config", "retention.ms=123456")
    assert code == 0, err
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap(cluster), **tls_config()})
    # librdkafka describes the cluster by a Metadata request to the controller it looks up first; a broker
    # that has no broker list yet (a cluster just started, this test run alone) leaves that lookup waiting
    # out the whole timeout, so the brokers' metadata is awaited first.
    def listed() -> bool:
        found = admin.list_topics(timeout=10)
        return "kafka-configured" in found.topics and len(found.brokers) == len(cluster.of_role("broker"))

    wait_for(listed, LEADER_DEADLINE_S, "kafka-configured and every broker in the metadata")
    described = admin.describe_cluster(request_timeout=30).result(30)
    assert {(n.id, n.host, n.port) for n in described.nodes} == {
        (p.instance_id, p.host, p.kafka_port) for p in cluster.of_role("broker")}
    resource = ConfigResource(ConfigResource.Type.TOPIC, "kafka-configured")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "123456" and not configs["retention.ms"].is_default
    assert configs["min.insync.replicas"].is_default


def admin_error(future) -> int | None:
    """The Kafka error code a create or delete future ends with (None: it succeeded)."""
    from confluent_kafka import KafkaException

    try:
        future.result(120)
    except KafkaException as exc:
        return exc.args[0].code()
    return None


def test_an_admin_client_creates_and_deletes_topics_as_the_gateway_does(cluster, replog):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap(cluster), **tls_config()})
    made = NewTopic("kafka-made", num_partitions=2, replication_factor=3, config={"retention.ms": "654321"})
    checked = admin.create_topics([made], validate_only=True, request_timeout=120)["kafka-made"]
    assert admin_error(checked) is None
    code, listed, err = replog("topics", "list")
    assert code == 0 and "kafka-made" not in listed.split(), err   # validated, not written

    created = admin.create_topics([made], operation_timeout=60, request_timeout=120)["kafka-made"]
    assert admin_error(created) is None
    code, listed, err = replog("topics", "list")   # the gateway sees the topic the listener wrote
    assert code == 0 and "kafka-made" in listed.split(), err
    wait_for(lambda: len(admin.list_topics("kafka-made", timeout=10).topics["kafka-made"].partitions) == 2,
             LEADER_DEADLINE_S, "kafka-made's two partitions in the metadata")
    resource = ConfigResource(ConfigResource.Type.TOPIC, "kafka-made")
    assert admin.describe_configs([resource])[resource].result(30)["retention.ms"].value == "654321"
    assert len(produce_with_librdkafka(cluster, "kafka-made", [(b"k", b"made by kafka", None, T0_MS)])) == 1

    refusals = admin.create_topics([
        NewTopic("kafka-made", 1, 1),                            # exists
        NewTopic("kafka/bad", 1, 1),                             # not a topic name
        NewTopic("kafka-too-replicated", 1, 4),                  # three brokers
        NewTopic("kafka-misconfigured", 1, 1, config={"retention.ms": "soon"}),
    ], request_timeout=120)
    assert {name: admin_error(f) for name, f in refusals.items()} == {
        "kafka-made": KafkaError.TOPIC_ALREADY_EXISTS,
        "kafka/bad": KafkaError.TOPIC_EXCEPTION,
        "kafka-too-replicated": KafkaError.INVALID_REPLICATION_FACTOR,
        "kafka-misconfigured": KafkaError.INVALID_CONFIG,
    }

    deleted = admin.delete_topics(["kafka-made", "kafka-never-made"], operation_timeout=60, request_timeout=120)
    assert admin_error(deleted["kafka-never-made"]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert admin_error(deleted["kafka-made"]) is None
    wait_for(lambda: "kafka-made" not in replog("topics", "list")[1].split(), LEADER_DEADLINE_S,
             "kafka-made deleted")


def test_kafka_python_describes_the_cluster_creates_and_deletes_a_topic(cluster, replog):
    """kafka-python's describe_cluster() asks for DescribeCluster v1 (its endpoint type) when offered."""
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as PyNewTopic

    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap(cluster).split(","), request_timeout_ms=120_000,
                             **kafka_python_tls())
    try:
        described = admin.describe_cluster()
        assert {(b["broker_id"], b["host"], b["port"]) for b in described["brokers"]} == {
            (p.instance_id, p.host, p.kafka_port) for p in cluster.of_role("broker")}
        assert described["controller_id"] in {p.instance_id for p in cluster.of_role("broker")}
        admin.create_topics([PyNewTopic("kafka-python-made", 3, 2)], timeout_ms=60_000)
        code, listed, err = replog("topics", "list")
        assert code == 0 and "kafka-python-made" in listed.split(), err
        admin.delete_topics(["kafka-python-made"], timeout_ms=60_000)
        wait_for(lambda: "kafka-python-made" not in replog("topics", "list")[1].split(), LEADER_DEADLINE_S,
                 "kafka-python-made deleted")
    finally:
        admin.close()
