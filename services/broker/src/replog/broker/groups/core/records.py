"""The records of __consumer_offsets: their keys, their values, and nothing else owns this shape.

Two kinds of record, each a JSON object (compact, keys sorted, so equal facts are equal bytes):

- an offset record, key `{"v": 1, "kind": "offset", "group", "topic", "partition"}`, value
  `{"offset", "leader_epoch", "metadata", "commit_time_ms"}`;
- a group record, key `{"v": 1, "kind": "group", "group"}`, value the group's snapshot
  (generation, protocol type and name, leader, and each member with its subscription under the
  chosen assignor and its assignment; bytes as base64).

A null value is a tombstone: the key's fact is deleted (an empty value, which older brokers wrote,
reads as one too). The latest record of a key wins, which is what compaction relies on; the log
cleaner removes a tombstone delete.retention.ms after it was written.
`decode` raises `RecordFormatError` for a record it cannot read; the loader skips and logs it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from replog.broker.groups.core.answers import GroupSnapshot, MemberSnapshot
from replog.broker.groups.core.model import CommittedOffset, Protocol
from replog.common.core.partitions import TopicPartition

VERSION = 1


class RecordFormatError(ValueError):
    pass


@dataclass(frozen=True)
class OffsetRecord:
    group_id: str
    tp: TopicPartition
    committed: CommittedOffset | None  # None: a tombstone


@dataclass(frozen=True)
class GroupRecord:
    group_id: str
    snapshot: GroupSnapshot | None  # None: a tombstone (the group was deleted)


def _dump(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def offset_key(group_id: str, tp: TopicPartition) -> bytes:
    return _dump({"v": VERSION, "kind": "offset", "group": group_id, "topic": tp.topic, "partition": tp.partition})


def offset_value(committed: CommittedOffset) -> bytes:
    return _dump({"offset": committed.offset, "leader_epoch": committed.leader_epoch,
                  "metadata": committed.metadata, "commit_time_ms": committed.commit_time_ms})


def group_key(group_id: str) -> bytes:
    return _dump({"v": VERSION, "kind": "group", "group": group_id})


def _tps(pairs: tuple[TopicPartition, ...]) -> list[list]:
    return [[tp.topic, tp.partition] for tp in pairs]


def group_value(snapshot: GroupSnapshot) -> bytes:
    members = [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "protocol": {"name": m.protocol.name, "topics": list(m.protocol.topics),
                             "owned": _tps(m.protocol.owned_partitions), "user_data": _b64(m.protocol.user_data)},
                "assignment": _tps(m.assignment), "user_data": _b64(m.user_data)}
               for m in snapshot.members]
    return _dump({"generation_id": snapshot.generation_id, "protocol_type": snapshot.protocol_type,
                  "protocol_name": snapshot.protocol_name, "leader_member_id": snapshot.leader_member_id,
                  "members": members})


def _tp_tuple(pairs) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(str(t), int(p)) for t, p in pairs)


def _member(m: dict) -> MemberSnapshot:
    p = m["protocol"]
    protocol = Protocol(p["name"], tuple(p["topics"]), _tp_tuple(p["owned"]), base64.b64decode(p["user_data"]))
    return MemberSnapshot(m["member_id"], m["client_id"], m["client_host"], int(m["session_timeout_ms"]),
                          int(m["rebalance_timeout_ms"]), protocol, _tp_tuple(m["assignment"]),
                          base64.b64decode(m["user_data"]))


def decode(key: bytes, value: bytes | None) -> OffsetRecord | GroupRecord:
    try:
        k = json.loads(key)
        if k.get("v") != VERSION:
            raise RecordFormatError(f"unknown offsets record version {k.get('v')!r}")
        if k["kind"] == "offset":
            tp = TopicPartition(k["topic"], int(k["partition"]))
            if not value:
                return OffsetRecord(k["group"], tp, None)
            v = json.loads(value)
            return OffsetRecord(k["group"], tp, CommittedOffset(int(v["offset"]), int(v["leader_epoch"]),
                                                                 str(v["metadata"]), int(v["commit_time_ms"])))
        if k["kind"] == "group":
            if not value:
                return GroupRecord(k["group"], None)
            v = json.loads(value)
            return GroupRecord(k["group"], GroupSnapshot(
                k["group"], int(v["generation_id"]), v["protocol_type"], v["protocol_name"], v["leader_member_id"],
                tuple(_member(m) for m in v["members"])))
        raise RecordFormatError(f"unknown offsets record kind {k['kind']!r}")
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, RecordFormatError):
            raise
        raise RecordFormatError(f"unreadable offsets record: {error}") from error
