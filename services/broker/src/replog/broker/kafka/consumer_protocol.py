"""Kafka's consumer protocol (the opaque bytes of JoinGroup and SyncGroup for protocol type
"consumer") <-> replog's structured group protocol (GroupProtocol, MemberAssignment in group.proto).

Kafka's coordinator never looks inside these bytes; replog's does (it knows each member's topics and
assigned partitions), so the listener reads a Kafka member's subscription (ConsumerProtocolSubscription
v0-v3: topics, user data, owned partitions, generation, rack) into the GroupProtocol fields and writes
them back for the leader; an assignment (ConsumerProtocolAssignment v0-v3) likewise. The version
written back is 1 (topics, user data, owned partitions), which every assignor of current clients reads.
Pure.
"""

from __future__ import annotations

from replog.broker.kafka.schema import Array, f, read_struct, write_struct
from replog.broker.kafka.wire import Reader, WireError, Writer

WRITTEN_VERSION = 1
_PARTITIONS = Array((f("topic", "string"), f("partitions", Array("int32"))))
SUBSCRIPTION = (
    f("topics", Array("string")),
    f("user_data", "bytes", nullable="0+"),
    f("owned_partitions", _PARTITIONS, "1+"),
    f("generation_id", "int32", "2+", default=-1),
    f("rack_id", "string", "3+", nullable="3+"),
)
ASSIGNMENT = (
    f("assigned_partitions", _PARTITIONS),
    f("user_data", "bytes", nullable="0+"),
)


def _read(data: bytes, fields: tuple) -> dict:
    reader = Reader(data)
    version = reader.int16()
    if version < 0:
        raise WireError(f"consumer protocol version {version}")
    # A newer version only adds fields at the end: read those this module knows (Kafka's own rule).
    return read_struct(reader, fields, min(version, 3), False)


def _write(value: dict, fields: tuple) -> bytes:
    writer = Writer()
    writer.int16(WRITTEN_VERSION)
    write_struct(writer, fields, value, WRITTEN_VERSION, False)
    return bytes(writer.out)


def _pairs(entries) -> list[tuple[str, int]]:
    return [(e["topic"], p) for e in entries or () for p in e["partitions"]]


def _grouped(pairs) -> list[dict]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def read_subscription(data: bytes) -> tuple[list[str], list[tuple[str, int]], bytes]:
    """(topics, owned (topic, partition) pairs, user data); WireError when malformed."""
    value = _read(data, SUBSCRIPTION)
    return value["topics"], _pairs(value["owned_partitions"]), value["user_data"] or b""


def write_subscription(topics, owned, user_data: bytes) -> bytes:
    return _write({"topics": list(topics), "owned_partitions": _grouped(owned), "user_data": user_data}, SUBSCRIPTION)


def read_assignment(data: bytes) -> tuple[list[tuple[str, int]], bytes]:
    if not data:  # a member given nothing may be sent no bytes at all
        return [], b""
    value = _read(data, ASSIGNMENT)
    return _pairs(value["assigned_partitions"]), value["user_data"] or b""


def write_assignment(partitions, user_data: bytes) -> bytes:
    return _write({"assigned_partitions": _grouped(partitions), "user_data": user_data}, ASSIGNMENT)
