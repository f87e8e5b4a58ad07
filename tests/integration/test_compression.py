"""Compressed batches end to end (issue 59), against real processes: every codec goes from the producer to
the log to the consumer unchanged; a topic's compression.type is what its batches are stored with; an
unknown codec and bytes that do not decompress are refused with typed codes and append nothing; the CLI
produces and consumes binary keys and values compressed, from --bootstrap-server alone; an unknown topic
is the client's typed error; `cluster status --exit-when-healthy` says whether the cluster is healthy."""

from __future__ import annotations

import json

import pytest
from crc32c import crc32c

from replog.client import Consumer, Producer, UnknownTopicError
from replog.common import records as rec
from replog.common.records.batch import CRC_COVERED, HEADER_SIZE, PREFIX
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2

from .broker_helpers import log_stub, produce_raw
from .gateway_helpers import cli_runner
from .retention_helpers import create, leader_of

pytestmark = pytest.mark.integration

RECORDS = 400


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("compression"))
    cluster = factory(ClusterSpec(controllers=1, brokers=2, gateways=1))
    yield cluster
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def bootstrap(cluster) -> str:
    return ",".join(p.address for p in cluster.of_role("broker"))  # a string: "host:port,host:port"


def records(tag: str) -> list[tuple[bytes, bytes, tuple]]:
    return [(b"user-%d" % (i % 37), json.dumps({"id": i, "tag": tag, "status": "active", "region": "eu-west-1",
                                                 "items": [i, i + 1]}).encode(), (("trace", b"t-%d" % i),))
            for i in range(RECORDS)]


def stored_codecs(cluster, topic: str) -> set[int]:
    """The codec bits of every batch the topic's leader stores."""
    reply = log_stub(cluster, leader_of(cluster, topic)).Fetch(log_pb2.FetchRequest(
        max_wait_ms=0, max_bytes=16 * 1024 * 1024, partitions=[log_pb2.FetchPartition(
            topic=topic, partition=0, fetch_offset=0, current_leader_epoch=-1)]), timeout=30)
    return {h.attributes & rec.ATTRIBUTE_COMPRESSION_MASK for _, h in rec.iter_batches(reply.partitions[0].records)}


def read_all(cluster, topic: str, count: int) -> list[tuple]:
    with Consumer(bootstrap(cluster), topic, iteration_timeout_ms=20_000) as consumer:
        got = []
        for r in consumer:
            got.append((r.key, r.value, r.headers))
            if len(got) == count:
                break
    return got


@pytest.mark.parametrize("codec", sorted(rec.CODECS))
def test_every_codec_goes_through_the_log_unchanged(cluster, replog, codec):
    topic = f"codec-{codec}"
    create(cluster, replog, topic, {}, replication_factor=2)
    sent = records(codec)
    with Producer(bootstrap(cluster), compression_type=codec, linger_ms=20) as producer:
        for key, value, headers in sent:
            producer.send(topic, value, key=key, headers=headers, partition=0)
    assert read_all(cluster, topic, RECORDS) == sent
    assert stored_codecs(cluster, topic) == {rec.CODECS[codec]}


@pytest.mark.parametrize("setting, producer_codec, stored", [
    ("gzip", "none", rec.COMPRESSION_GZIP), ("uncompressed", "zstd", rec.COMPRESSION_NONE),
    ("producer", "lz4", rec.COMPRESSION_LZ4)])
def test_a_topics_compression_type_is_what_its_batches_are_stored_with(cluster, replog, setting, producer_codec,
                                                                       stored):
    topic = f"stored-{setting}"
    create(cluster, replog, topic, {"compression.type": setting}, replication_factor=2)
    sent = records(setting)
    with Producer(bootstrap(cluster), compression_type=producer_codec) as producer:
        for key, value, headers in sent:
            producer.send(topic, value, key=key, headers=headers, partition=0)
    assert read_all(cluster, topic, RECORDS) == sent
    assert stored_codecs(cluster, topic) == {stored}


def _with_body(batch: bytes, attributes: int, body: bytes) -> bytes:
    header = rec.read_header(batch)
    covered = CRC_COVERED.pack(attributes, *header[6:])
    return PREFIX.pack(0, rec.MIN_BATCH_LENGTH + len(body), -1, 2, crc32c(body, crc32c(covered))) + covered + body


def test_bad_codecs_are_refused_with_typed_codes_and_append_nothing(cluster, replog):
    create(cluster, replog, "refused", {}, replication_factor=2)
    leader = leader_of(cluster, "refused")
    plain = rec.encode_batch([(None, b"v", 1)])
    unknown = produce_raw(cluster, leader, "refused", _with_body(plain, 6, plain[HEADER_SIZE:]))
    assert unknown.error_code == common_pb2.ERROR_CODE_UNSUPPORTED_COMPRESSION_TYPE, unknown.error_message
    garbage = produce_raw(cluster, leader, "refused", _with_body(plain, rec.COMPRESSION_ZSTD, b"not zstd at all"))
    assert garbage.error_code == common_pb2.ERROR_CODE_CORRUPT_RECORD and "decompress" in garbage.error_message
    gzipped = rec.encode_batch([(None, b"ok", 1)], compression=rec.COMPRESSION_GZIP)
    good = produce_raw(cluster, leader, "refused", gzipped)
    assert (good.error_code, good.base_offset) == (common_pb2.ERROR_CODE_NONE, 0)  # the refused ones took no offset


def test_an_unknown_topic_is_the_clients_typed_error(cluster):
    with Producer(bootstrap(cluster)) as producer:
        with pytest.raises(UnknownTopicError, match="does not exist"):
            producer.send("no-such-topic", b"v")
    with pytest.raises(UnknownTopicError):
        Consumer(bootstrap(cluster), "no-such-topic")


def test_the_cli_moves_binary_keys_and_values_compressed_without_the_gateway(cluster, replog, capsys, monkeypatch):
    create(cluster, replog, "binary", {}, replication_factor=2)
    key, value = bytes([0, 255, 128, 10]), bytes(range(256))
    line = f"{key.hex()}:{value.hex()}\n"
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(line * 3))
    where = ("--bootstrap-server", bootstrap(cluster), "--gateway", "127.0.0.1:1")  # a gateway nobody answers at
    code, _, err = replog("produce", "--topic", "binary", *where, "--key-separator", ":", "--key-format", "hex",
                          "--value-format", "hex", "--compression-type", "zstd")
    assert code == 0, err
    code, out, err = replog("consume", "--topic", "binary", *where, "--from-beginning", "--key-format", "base64",
                            "--value-format", "base64", "-o", "json", "--timeout-ms", "3000")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    import base64

    assert [(base64.b64decode(r["key"]), base64.b64decode(r["value"])) for r in got] == [(key, value)] * 3
    assert stored_codecs(cluster, "binary") == {rec.COMPRESSION_ZSTD}


def test_cluster_status_exits_non_zero_until_the_cluster_is_healthy(cluster, replog):
    code, out, err = replog("cluster", "status", "--exit-when-healthy", "--wait-s", "30")
    assert code == 0, (out, err)
    cluster.kill("broker-2")  # the last test of the module: its partitions are now under-replicated
    code, out, err = replog("cluster", "status", "--exit-when-healthy")
    assert code == 1 and "not healthy" in err and "broker 2" in err, (out, err)
    code, _, err = replog("cluster", "status")  # without the flag the exit status says only that it answered
    assert code == 0, err
