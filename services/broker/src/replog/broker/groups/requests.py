"""GroupService requests checked field by field and turned into domain values.

A malformed field raises `BadRequest` with a message naming the field and the rule; the servicer
refuses the call with INVALID_ARGUMENT. A bad group id is the typed INVALID_GROUP_ID instead, as
the contract says. Every list and byte string has a bound (TigerBeetle: a limit on everything).
"""

from __future__ import annotations

from replog.broker.groups.core.model import NO_GENERATION, NO_LEADER_EPOCH, CommittedOffset, JoinRequest, Protocol
from replog.common.core.partitions import TopicPartition
from replog.v1 import group_pb2

NAME_LENGTH_MAX = 255        # member ids, client ids, protocol types and names
TOPIC_LENGTH_MAX = 249
PROTOCOLS_MAX = 8
TOPICS_MAX = 10_000
PARTITIONS_MAX = 100_000     # owned or assigned partitions in one request
COMMIT_PARTITIONS_MAX = 10_000
USER_DATA_BYTES_MAX = 64 * 1024
METADATA_BYTES_MAX = 4096
GROUP_IDS_MAX = 100
REBALANCE_TIMEOUT_MS_MAX = 600_000


class BadRequest(ValueError):
    pass


def _name(value: str, field: str, *, empty_ok: bool = False) -> str:
    if not value and not empty_ok:
        raise BadRequest(f"{field} is empty")
    if len(value) > NAME_LENGTH_MAX:
        raise BadRequest(f"{field} is longer than {NAME_LENGTH_MAX} characters")
    return value


def _topic(topic: str, field: str) -> str:
    if not topic or len(topic) > TOPIC_LENGTH_MAX:
        raise BadRequest(f"{field} {topic[:40]!r} is not a topic name (1 to {TOPIC_LENGTH_MAX} characters)")
    return topic


def _partitions(pairs, field: str, limit: int = PARTITIONS_MAX) -> tuple[TopicPartition, ...]:
    if len(pairs) > limit:
        raise BadRequest(f"{field} lists {len(pairs)} partitions; at most {limit}")
    out = []
    for p in pairs:
        if p.partition < 0:
            raise BadRequest(f"{field} names partition {p.partition} of {p.topic!r}; partitions start at 0")
        out.append(TopicPartition(_topic(p.topic, field), p.partition))
    if len(set(out)) != len(out):
        raise BadRequest(f"{field} names a partition twice")
    return tuple(out)


def _user_data(data: bytes, field: str) -> bytes:
    if len(data) > USER_DATA_BYTES_MAX:
        raise BadRequest(f"{field} holds {len(data)} bytes; at most {USER_DATA_BYTES_MAX}")
    return data


def join_request(request: group_pb2.JoinGroupRequest, client_host: str) -> JoinRequest:
    if not 0 < len(request.protocols) <= PROTOCOLS_MAX:
        raise BadRequest(f"protocols lists {len(request.protocols)} assignors; give 1 to {PROTOCOLS_MAX}")
    protocols = []
    for p in request.protocols:
        if len(p.topics) > TOPICS_MAX:
            raise BadRequest(f"protocol {p.name!r} subscribes to {len(p.topics)} topics; at most {TOPICS_MAX}")
        protocols.append(Protocol(_name(p.name, "protocols.name"),
                                  tuple(_topic(t, "protocols.topics") for t in p.topics),
                                  _partitions(p.owned_partitions, "protocols.owned_partitions"),
                                  _user_data(p.user_data, "protocols.user_data")))
    if len({p.name for p in protocols}) != len(protocols):
        raise BadRequest("protocols names an assignor twice")
    if request.session_timeout_ms <= 0:
        raise BadRequest(f"session_timeout_ms {request.session_timeout_ms} must be positive")
    rebalance_timeout_ms = request.rebalance_timeout_ms or request.session_timeout_ms
    if not 0 < rebalance_timeout_ms <= REBALANCE_TIMEOUT_MS_MAX:
        raise BadRequest(f"rebalance_timeout_ms {request.rebalance_timeout_ms} is outside "
                         f"1..{REBALANCE_TIMEOUT_MS_MAX}")
    return JoinRequest(_name(request.member_id, "member_id", empty_ok=True),
                       _name(request.client_id, "client_id", empty_ok=True), client_host,
                       request.session_timeout_ms, rebalance_timeout_ms,
                       _name(request.protocol_type, "protocol_type"), tuple(protocols))


def sync_assignments(request: group_pb2.SyncGroupRequest) -> dict[str, tuple[tuple[TopicPartition, ...], bytes]]:
    _member(request.member_id, request.generation_id)
    out: dict[str, tuple[tuple[TopicPartition, ...], bytes]] = {}
    for a in request.assignments:
        if a.member_id in out:
            raise BadRequest(f"assignments names member {a.member_id!r} twice")
        out[_name(a.member_id, "assignments.member_id")] = (_partitions(a.partitions, "assignments.partitions"),
                                                            _user_data(a.user_data, "assignments.user_data"))
    every = [tp for partitions, _ in out.values() for tp in partitions]
    if len(every) > PARTITIONS_MAX or len(set(every)) != len(every):
        raise BadRequest("assignments gives a partition to two members (or lists too many)")
    return out


def _member(member_id: str, generation_id: int) -> None:
    _name(member_id, "member_id")
    if generation_id < 0:
        raise BadRequest(f"generation_id {generation_id} must be 0 or more")


def member(member_id: str, generation_id: int) -> None:
    """A heartbeat's or sync's member and generation."""
    _member(member_id, generation_id)


def commit_offsets(partitions, now_ms: int) -> list[tuple[TopicPartition, CommittedOffset]]:
    if not 0 < len(partitions) <= COMMIT_PARTITIONS_MAX:
        raise BadRequest(f"partitions lists {len(partitions)} offsets; give 1 to {COMMIT_PARTITIONS_MAX}")
    tps = _partitions(partitions, "partitions", COMMIT_PARTITIONS_MAX)
    out = []
    for tp, p in zip(tps, partitions):
        if p.offset < 0:
            raise BadRequest(f"offset {p.offset} of {tp} must be 0 or more")
        if p.leader_epoch < NO_LEADER_EPOCH:
            raise BadRequest(f"leader_epoch {p.leader_epoch} of {tp} must be -1 (unknown) or more")
        if len(p.metadata.encode()) > METADATA_BYTES_MAX:
            raise BadRequest(f"metadata of {tp} is longer than {METADATA_BYTES_MAX} bytes")
        out.append((tp, CommittedOffset(p.offset, p.leader_epoch, p.metadata, now_ms)))
    return out


def commit_member(member_id: str, generation_id: int) -> None:
    if generation_id == NO_GENERATION and not member_id:
        return
    if generation_id < 0 or not member_id:
        raise BadRequest("a commit names a member and its generation (0 or more), or neither (generation -1)")
    _name(member_id, "member_id")


def fetch_partitions(request: group_pb2.OffsetFetchRequest) -> list[TopicPartition]:
    return list(_partitions(request.partitions, "partitions", COMMIT_PARTITIONS_MAX))


def group_ids(ids) -> list[str]:
    if not 0 < len(ids) <= GROUP_IDS_MAX:
        raise BadRequest(f"group_ids lists {len(ids)} groups; give 1 to {GROUP_IDS_MAX}")
    return list(ids)
