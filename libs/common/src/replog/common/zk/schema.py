"""The one owner of replog's ZooKeeper layout (docs/zookeeper.md is drawn from it).

Every znode path and every JSON shape is built and parsed here and nowhere
else. Shapes follow Kafka's so existing knowledge and tools carry over; each
value has a `version` field. Decoders are strict: a value that is not the
expected shape raises `ZkDataError` naming the path and the problem, because a
controller acting on a misread partition state could lose data.

The layout (every path, who writes it, what it holds, with an example) is the
`LAYOUT` table at the end of this module; docs/zookeeper.md is drawn from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
UNCLEAN_LEADER_ELECTION = "/admin/unclean_leader_election"
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
REASSIGNMENT_THROTTLE = "/config/reassignment_throttle"

# Persistent parents every cluster needs; created idempotently at start-up.
PERSISTENT_PATHS = (BROKERS, BROKER_IDS, TOPICS, ADMIN, DELETE_TOPICS, CONFIG, CONFIG_TOPICS)


class ZkDataError(ValueError):
    """A znode holds data that is not the shape this module expects."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def parse_topic_path(path: str) -> tuple[str, str, int | None] | None:
    """Name a znode under /brokers/topics or /config/topics: ("assignment", topic, None),
    ("state", topic, partition) or ("config", topic, None); None for any other path."""
    if path.startswith(CONFIG_TOPICS + "/"):
        topic = path[len(CONFIG_TOPICS) + 1:]
        return ("config", topic, None) if topic and "/" not in topic else None
    if not path.startswith(TOPICS + "/"):
        return None
    parts = path[len(TOPICS) + 1:].split("/")
    if len(parts) == 1 and parts[0]:
        return "assignment", parts[0], None
    if len(parts) == 4 and parts[1] == "partitions" and parts[3] == "state" and parts[2].isdigit():
        return "state", parts[0], int(parts[2])
    return None


# --- helpers ----------------------------------------------------------------

def _dump(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _load(data: bytes, path: str) -> dict[str, Any]:
    try:
        value = json.loads(data.decode() if data else "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZkDataError(f"{path}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ZkDataError(f"{path}: expected a JSON object, found {type(value).__name__}")
    if not isinstance(value.get("version"), int):
        raise ZkDataError(f"{path}: missing integer 'version' field")
    return value


def _int(value: dict, key: str, path: str) -> int:
    item = value.get(key)
    if not isinstance(item, int) or isinstance(item, bool):
        raise ZkDataError(f"{path}: '{key}' must be an integer, found {item!r}")
    return item


def _int_list(item: Any, what: str, path: str) -> tuple[int, ...]:
    if not isinstance(item, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in item):
        raise ZkDataError(f"{path}: {what} must be a list of integers, found {item!r}")
    return tuple(item)


def _partition_map(item: Any, what: str, path: str) -> dict[int, tuple[int, ...]]:
    if item is None:
        return {}
    if not isinstance(item, dict):
        raise ZkDataError(f"{path}: '{what}' must be an object of partition -> replicas")
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in item.items():
        try:
            partition = int(key)
        except ValueError:
            raise ZkDataError(f"{path}: '{what}' has a non-numeric partition {key!r}") from None
        out[partition] = _int_list(replicas, f"{what}[{key}]", path)
    return out


# --- /controller and /controller_epoch -----------------------------------------

@dataclass(frozen=True)
class ControllerRecord:
    """Who holds the controller seat, and where brokers reach its ControllerService."""

    controller_id: int
    timestamp_ms: int
    host: str = ""
    port: int = 0

    def encode(self) -> bytes:
        return _dump({
            "version": 1,
            "controller_id": self.controller_id,
            "timestamp": str(self.timestamp_ms),
            "host": self.host,
            "port": self.port,
        })

    @staticmethod
    def decode(data: bytes, path: str = CONTROLLER) -> "ControllerRecord":
        value = _load(data, path)
        return ControllerRecord(
            _int(value, "controller_id", path),
            int(value.get("timestamp", 0) or 0),
            str(value.get("host", "") or ""),
            int(value.get("port", 0) or 0),
        )


def encode_controller_epoch(controller_epoch: int) -> bytes:
    return str(controller_epoch).encode()


def decode_controller_epoch(data: bytes, path: str = CONTROLLER_EPOCH) -> int:
    try:
        return int(data.decode())
    except (UnicodeDecodeError, ValueError):
        raise ZkDataError(f"{path}: expected a decimal integer, found {data[:40]!r}") from None


# --- /brokers/ids/<id> -------------------------------------------------------------

@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    metrics_port: int = 0
    timestamp_ms: int = 0

    def encode(self) -> bytes:
        return _dump({
            "version": 5,
            "host": self.host,
            "port": self.port,
            "rack": self.rack,
            "endpoints": [f"GRPC://{self.host}:{self.port}"],
            "metrics_port": self.metrics_port,
            "timestamp": str(self.timestamp_ms),
        })

    @staticmethod
    def decode(broker_id: int, data: bytes) -> "BrokerRegistration":
        path = broker_path(broker_id)
        value = _load(data, path)
        host = value.get("host")
        if not isinstance(host, str) or not host:
            raise ZkDataError(f"{path}: 'host' must be a non-empty string")
        rack = value.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ZkDataError(f"{path}: 'rack' must be a string or null")
        return BrokerRegistration(
            broker_id=broker_id,
            host=host,
            port=_int(value, "port", path),
            rack=rack or None,
            metrics_port=int(value.get("metrics_port", 0) or 0),
            timestamp_ms=int(value.get("timestamp", 0) or 0),
        )


# --- /brokers/topics/<topic> ---------------------------------------------------------

@dataclass(frozen=True)
class TopicAssignment:
    """Assigned replicas per partition, plus any reassignment in flight (KIP-455)."""

    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    def encode(self) -> bytes:
        def as_json(mapping: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
            return {str(p): list(r) for p, r in sorted(mapping.items())}

        return _dump({
            "version": 2,
            "partitions": as_json(self.partitions),
            "adding_replicas": as_json(self.adding_replicas),
            "removing_replicas": as_json(self.removing_replicas),
        })

    @staticmethod
    def decode(topic: str, data: bytes) -> "TopicAssignment":
        path = topic_path(topic)
        value = _load(data, path)
        partitions = _partition_map(value.get("partitions"), "partitions", path)
        if not partitions:
            raise ZkDataError(f"{path}: 'partitions' is empty")
        return TopicAssignment(
            partitions=partitions,
            adding_replicas=_partition_map(value.get("adding_replicas"), "adding_replicas", path),
            removing_replicas=_partition_map(value.get("removing_replicas"), "removing_replicas", path),
        )


# --- partition state ----------------------------------------------------------------

@dataclass(frozen=True)
class PartitionStateRecord:
    """Leader, leader epoch and ISR of one partition; the znode version is its partition epoch."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        # The same bytes as _dump of the five fields (sorted keys, no spaces), formatted directly:
        # the controller writes 10K of these per broker failover (docs/perf/zookeeper-partition-state-json.md).
        if not all(type(v) is int for v in (self.controller_epoch, self.leader, self.leader_epoch, *self.isr)):
            return _dump({"version": 1, "controller_epoch": self.controller_epoch, "leader": self.leader,
                          "leader_epoch": self.leader_epoch, "isr": list(self.isr)})
        return (f'{{"controller_epoch":{self.controller_epoch},"isr":[{",".join(map(str, self.isr))}],'
                f'"leader":{self.leader},"leader_epoch":{self.leader_epoch},"version":1}}').encode()

    @staticmethod
    def decode(data: bytes, path: str = "partition state") -> "PartitionStateRecord":
        # The hot path of a controller failover (100K of these): check the exact types inline and
        # fall back to the descriptive checks only on a mismatch (docs/perf/zookeeper-partition-state-json.md).
        try:
            value = json.loads(data)
            leader, leader_epoch = value["leader"], value["leader_epoch"]
            isr, controller_epoch = value["isr"], value["controller_epoch"]
            if (type(value["version"]) is int and type(leader) is int and type(leader_epoch) is int
                    and type(controller_epoch) is int and type(isr) is list
                    and all(type(b) is int for b in isr)):
                return PartitionStateRecord(leader, leader_epoch, tuple(isr), controller_epoch)
        except (ValueError, KeyError, TypeError):
            pass
        value = _load(data, path)
        return PartitionStateRecord(
            leader=_int(value, "leader", path),
            leader_epoch=_int(value, "leader_epoch", path),
            isr=_int_list(value.get("isr"), "'isr'", path),
            controller_epoch=_int(value, "controller_epoch", path),
        )


# --- /admin requests -------------------------------------------------------------------

@dataclass(frozen=True)
class ReassignmentRequest:
    """Target replicas per partition; an empty replica list cancels that partition's reassignment."""

    targets: Mapping[tuple[str, int], tuple[int, ...]]

    def encode(self) -> bytes:
        return _dump({
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": partition, "replicas": list(replicas)}
                for (topic, partition), replicas in sorted(self.targets.items())
            ],
        })

    @staticmethod
    def decode(data: bytes, path: str = REASSIGN_PARTITIONS) -> "ReassignmentRequest":
        value = _load(data, path)
        return ReassignmentRequest(_partition_list(value, path, with_replicas=True))


@dataclass(frozen=True)
class ElectionRequest:
    """Partitions asking for a preferred (or unclean) leader election."""

    partitions: tuple[tuple[str, int], ...]

    def encode(self) -> bytes:
        return _dump({
            "version": 1,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(self.partitions)],
        })

    @staticmethod
    def decode(data: bytes, path: str = PREFERRED_REPLICA_ELECTION) -> "ElectionRequest":
        value = _load(data, path)
        return ElectionRequest(tuple(sorted(_partition_list(value, path, with_replicas=False))))


def _partition_list(value: dict, path: str, with_replicas: bool) -> dict[tuple[str, int], tuple[int, ...]]:
    items = value.get("partitions")
    if not isinstance(items, list):
        raise ZkDataError(f"{path}: 'partitions' must be a list")
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise ZkDataError(f"{path}: partitions[{index}] needs a string 'topic'")
        partition = _int(item, "partition", f"{path} partitions[{index}]")
        key = (item["topic"], partition)
        if key in out:
            raise ZkDataError(f"{path}: partition {key[0]}-{key[1]} is listed twice")
        out[key] = _int_list(item.get("replicas"), f"partitions[{index}].replicas", path) if with_replicas else ()
    return out


# --- /config/topics/<topic> ------------------------------------------------------------

@dataclass(frozen=True)
class TopicConfigRecord:
    config: Mapping[str, str]

    def encode(self) -> bytes:
        return _dump({"version": 1, "config": dict(sorted(self.config.items()))})

    @staticmethod
    def decode(topic: str, data: bytes) -> "TopicConfigRecord":
        path = topic_config_path(topic)
        value = _load(data, path)
        config = value.get("config", {})
        if not isinstance(config, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in config.items()):
            raise ZkDataError(f"{path}: 'config' must be an object of string -> string")
        return TopicConfigRecord(config)


# --- /latest_producer_id_block -----------------------------------------------------------

@dataclass(frozen=True)
class ProducerIdBlock:
    """The last block of producer ids handed to a broker: [block_start, block_end]."""

    broker_id: int
    block_start: int
    block_end: int

    def encode(self) -> bytes:
        return _dump({
            "version": 1,
            "broker": self.broker_id,
            "block_start": str(self.block_start),
            "block_end": str(self.block_end),
        })

    @staticmethod
    def decode(data: bytes, path: str = PRODUCER_ID_BLOCK) -> "ProducerIdBlock":
        value = _load(data, path)
        try:
            return ProducerIdBlock(_int(value, "broker", path), int(value["block_start"]), int(value["block_end"]))
        except (KeyError, ValueError):
            raise ZkDataError(f"{path}: needs numeric 'block_start' and 'block_end'") from None


# --- /config/reassignment_throttle -------------------------------------------------------

@dataclass(frozen=True)
class ReassignmentThrottle:
    """Replication throttle for reassignment traffic; 0 means none."""

    bytes_per_s: int

    def encode(self) -> bytes:
        return _dump({"version": 1, "bytes_per_s": self.bytes_per_s})

    @staticmethod
    def decode(data: bytes, path: str = REASSIGNMENT_THROTTLE) -> "ReassignmentThrottle":
        value = _load(data, path)
        rate = _int(value, "bytes_per_s", path)
        if rate < 0:
            raise ZkDataError(f"{path}: 'bytes_per_s' must be 0 or more")
        return ReassignmentThrottle(rate)


# --- the layout, as data ----------------------------------------------------------------------
# docs/zookeeper.md is drawn from this table (docs/generate.py); a unit test checks that every
# path constant above has a row, so a new znode cannot be left out of the reference.

@dataclass(frozen=True)
class Znode:
    path: str          # with <placeholders> for the variable parts
    kind: str          # "persistent" or "ephemeral"
    writer: str        # who creates and changes it
    meaning: str
    example: bytes     # what it holds, encoded by this module


LAYOUT: tuple[Znode, ...] = (
    Znode(CONTROLLER, "ephemeral", "the controller that wins the election",
          "the active controller; its deletion starts an election",
          ControllerRecord(1, 1767225600000, "10.0.0.5", 9190).encode()),
    Znode(CONTROLLER_EPOCH, "persistent", "the controller that wins the election",
          "the controller epoch as decimal text; its zkVersion fences every controller write",
          encode_controller_epoch(7)),
    Znode(broker_path("<id>"), "ephemeral", "that broker only",
          "a live broker's registration; its czxid is the broker epoch",
          BrokerRegistration(2, "10.0.0.6", 9290, "b", 9390, 1767225600000).encode()),
    Znode(topic_path("<topic>"), "persistent", "the gateway (create, add partitions); the controller (reassignment)",
          "the topic's replica assignment, and the replicas being added or removed",
          TopicAssignment({0: (1, 2, 3), 1: (2, 3, 4)}, {1: (4,)}, {1: (1,)}).encode()),
    Znode(partition_state_path("<topic>", "<p>"), "persistent", "the active controller only",
          "leader, leader epoch and ISR; its zkVersion is the partition epoch",
          PartitionStateRecord(1, 4, (1, 2, 3), 7).encode()),
    Znode(delete_topic_path("<topic>"), "persistent", "the gateway; the controller deletes it when done",
          "the topic is being deleted", b""),
    Znode(REASSIGN_PARTITIONS, "persistent", "the gateway; the controller deletes it when done",
          "requested reassignments (an empty replica list cancels one)",
          ReassignmentRequest({("orders", 1): (2, 3, 4)}).encode()),
    Znode(PREFERRED_REPLICA_ELECTION, "persistent", "the gateway; the controller deletes it when done",
          "partitions whose preferred replica should lead", ElectionRequest((("orders", 0),)).encode()),
    Znode(UNCLEAN_LEADER_ELECTION, "persistent", "the gateway; the controller deletes it when done",
          "partitions to elect a leader outside the ISR for (may lose records)",
          ElectionRequest((("orders", 0),)).encode()),
    Znode(topic_config_path("<topic>"), "persistent", "the gateway",
          "the topic's config overrides", TopicConfigRecord({"min.insync.replicas": "2"}).encode()),
    Znode(REASSIGNMENT_THROTTLE, "persistent", "the gateway (reassign execute / verify)",
          "bytes per second a replica being added may copy", ReassignmentThrottle(10485760).encode()),
    Znode(PRODUCER_ID_BLOCK, "persistent", "brokers, by conditional update",
          "the last block of producer ids handed out", ProducerIdBlock(2, 1000, 1999).encode()),
)
