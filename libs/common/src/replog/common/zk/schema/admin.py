"""The JSON of the requests the gateway leaves for the controller under /admin, and the throttle.

The gateway writes a request znode; the controller acts on it and deletes it when done. Each
value is a frozen dataclass with `encode()` and a strict `decode()`; the request files follow
kafka-reassign-partitions and Kafka's election znodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .codec import ZkDataError, dump_json, int_field, int_list, load_json
from .paths import PREFERRED_REPLICA_ELECTION, REASSIGN_PARTITIONS, REASSIGNMENT_THROTTLE


# --- /admin requests -------------------------------------------------------------------

@dataclass(frozen=True)
class ReassignmentRequest:
    """Target replicas per partition; an empty replica list cancels that partition's reassignment."""

    targets: Mapping[tuple[str, int], tuple[int, ...]]

    def encode(self) -> bytes:
        return dump_json({
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": partition, "replicas": list(replicas)}
                for (topic, partition), replicas in sorted(self.targets.items())
            ],
        })

    @staticmethod
    def decode(data: bytes, path: str = REASSIGN_PARTITIONS) -> "ReassignmentRequest":
        value = load_json(data, path)
        return ReassignmentRequest(_partition_list(value, path, with_replicas=True))


@dataclass(frozen=True)
class ElectionRequest:
    """Partitions asking for a preferred (or unclean) leader election."""

    partitions: tuple[tuple[str, int], ...]

    def encode(self) -> bytes:
        return dump_json({
            "version": 1,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(self.partitions)],
        })

    @staticmethod
    def decode(data: bytes, path: str = PREFERRED_REPLICA_ELECTION) -> "ElectionRequest":
        value = load_json(data, path)
        return ElectionRequest(tuple(sorted(_partition_list(value, path, with_replicas=False))))


def _partition_list(value: dict, path: str, with_replicas: bool) -> dict[tuple[str, int], tuple[int, ...]]:
    items = value.get("partitions")
    if not isinstance(items, list):
        raise ZkDataError(f"{path}: 'partitions' must be a list")
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise ZkDataError(f"{path}: partitions[{index}] needs a string 'topic'")
        partition = int_field(item, "partition", f"{path} partitions[{index}]")
        key = (item["topic"], partition)
        if key in out:
            raise ZkDataError(f"{path}: partition {key[0]}-{key[1]} is listed twice")
        out[key] = int_list(item.get("replicas"), f"partitions[{index}].replicas", path) if with_replicas else ()
    return out


# --- /config/reassignment_throttle -------------------------------------------------------

@dataclass(frozen=True)
class ReassignmentThrottle:
    """Replication throttle for reassignment traffic; 0 means none."""

    bytes_per_s: int

    def encode(self) -> bytes:
        return dump_json({"version": 1, "bytes_per_s": self.bytes_per_s})

    @staticmethod
    def decode(data: bytes, path: str = REASSIGNMENT_THROTTLE) -> "ReassignmentThrottle":
        value = load_json(data, path)
        rate = int_field(value, "bytes_per_s", path)
        if rate < 0:
            raise ZkDataError(f"{path}: 'bytes_per_s' must be 0 or more")
        return ReassignmentThrottle(rate)

