"""The Kafka listener's message codec (broker/kafka/wire.py, schema.py, apis.py, server.py's framing):
every request and response of every offered version reads back what was written, in the classic and
the flexible forms; varints round-trip; and no request bytes, however malformed, make the listener do
anything but answer or close that connection."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse

from replog.broker.kafka import apis, errors
from replog.broker.kafka.consumer_protocol import (
    read_assignment,
    read_subscription,
    write_assignment,
    write_subscription,
)
from replog.broker.kafka.handlers import _endpoint_refusal
from replog.broker.kafka.schema import Array, read_struct, write_struct
from replog.broker.kafka.server import KafkaListener, Session
from replog.broker.kafka.wire import Reader, WireError, Writer, encode_uvarint, encode_varint

VERSIONS = [(api, version) for api in apis.ALL for version in range(api.min_version, api.max_version + 1)]


def sample(fields: tuple, version: int, depth: int = 0) -> dict:
    """A value for every field present in `version`, distinct from the defaults where it can be."""
    out = {}
    for field in fields:
        if not field.present(version):
            continue
        out[field.name] = _sample_type(field.type, version, depth)
    return out


def _sample_type(type_, version: int, depth: int):
    if isinstance(type_, tuple):
        return sample(type_, version, depth + 1)
    if isinstance(type_, Array):
        return [_sample_type(type_.item, version, depth + 1) for _ in range(2)]
    return {"int8": 7, "int16": -300, "int32": 70000, "int64": -(2**40), "bool": True, "string": "té",
            "bytes": b"\x00\x01", "records": b"rec", "uuid": bytes(range(16)), "float64": 1.5}[type_]


@pytest.mark.parametrize("api, version", VERSIONS, ids=[f"{a.name}-v{v}" for a, v in VERSIONS])
def test_every_message_of_every_version_reads_back_what_was_written(api, version):
    for fields in (api.request, api.response):
        value = sample(fields, version)
        writer = Writer()
        write_struct(writer, fields, value, version, api.flexible(version))
        reader = Reader(bytes(writer.out))
        read = read_struct(reader, fields, version, api.flexible(version))
        assert reader.left == 0
        assert trimmed(read, value) == value


def trimmed(read, written):
    """`read` with only the keys `written` has, at every depth (absent fields read as their defaults)."""
    if isinstance(written, dict):
        return {k: trimmed(read[k], v) for k, v in written.items()}
    if isinstance(written, list):
        return [trimmed(r, w) for r, w in zip(read, written)] if len(read) == len(written) else read
    return read


def test_describe_cluster_v1_reads_and_writes_as_a_kafka_client_does():
    """The endpoint type sits where Kafka's DescribeCluster v1 puts it: kafka-python's request bytes read
    as the listener's request, and the listener's response reads back in kafka-python's decoder."""
    api, version = apis.DESCRIBE_CLUSTER, 1
    sent = DescribeClusterRequest[version](include_cluster_authorized_operations=True, endpoint_type=2).encode()
    assert read_struct(Reader(bytes(sent)), api.request, version, True) == {
        "include_cluster_authorized_operations": True, "endpoint_type": apis.ENDPOINT_CONTROLLERS}

    writer = Writer()
    write_struct(writer, api.response, {
        "error_code": 0, "cluster_id": "c1", "controller_id": 2,
        "brokers": [{"broker_id": 2, "host": "h", "port": 9092, "rack": None}]}, version, True)
    read = DescribeClusterResponse[version].decode(bytes(writer.out))
    assert (read.endpoint_type, read.cluster_id, read.controller_id) == (apis.ENDPOINT_BROKERS, "c1", 2)
    assert [(b.broker_id, b.host, b.port) for b in read.brokers] == [(2, "h", 9092)]


@pytest.mark.parametrize("endpoint_type, code", [(apis.ENDPOINT_BROKERS, None),
                                                 (apis.ENDPOINT_CONTROLLERS, errors.MISMATCHED_ENDPOINT_TYPE),
                                                 (0, errors.UNSUPPORTED_ENDPOINT_TYPE),
                                                 (3, errors.UNSUPPORTED_ENDPOINT_TYPE)])
def test_describe_cluster_serves_the_brokers_and_refuses_other_endpoint_types(endpoint_type, code):
    refusal = _endpoint_refusal(endpoint_type)
    assert (None if refusal is None else refusal["error_code"]) == code


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_zigzag_varints_round_trip(value):
    assert Reader(encode_varint(value)).varint() == value


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_unsigned_varints_round_trip(value):
    assert Reader(encode_uvarint(value)).uvarint() == value


def test_a_length_past_the_end_is_refused_before_anything_is_built():
    with pytest.raises(WireError):
        Reader(struct.pack(">i", 1_000_000) + b"x").array_length(compact=False)
    with pytest.raises(WireError):
        Reader(struct.pack(">h", 50) + b"abc").string(compact=False, nullable=False)


def test_the_consumer_protocol_round_trips():
    data = write_subscription(["a", "b"], [("a", 1), ("b", 0), ("a", 0)], b"ud")
    assert read_subscription(data) == (["a", "b"], [("a", 0), ("a", 1), ("b", 0)], b"ud")
    assert read_assignment(write_assignment([("t", 2), ("t", 1)], b"")) == ([("t", 1), ("t", 2)], b"")
    assert read_assignment(b"") == ([], b"")


@pytest.fixture(scope="module")
def listener():
    calls = []

    def dispatch(session: Session, api, version, request):
        calls.append(api.name)
        return {}

    served = KafkaListener(host="127.0.0.1", port=0, tls=None, dispatch=dispatch, request_bytes_max=1 << 20,
                           connections_max=1)
    yield served
    served.stop()


@given(api_key=st.sampled_from(sorted(apis.BY_KEY) + [57, 999, -1]), version=st.integers(-1, 15),
       body=st.binary(max_size=200))
def test_malformed_requests_are_answered_or_closed_never_raised(listener, api_key, version, body):
    frame = struct.pack(">hhi", api_key, version, 42) + body
    answer = listener._answer(Session(None, "test"), frame)
    assert answer is None or answer[:4] == struct.pack(">i", 42)


def test_a_frame_too_short_for_a_header_closes_the_connection(listener):
    assert listener._answer(Session(None, "test"), b"\x00\x12") is None
