"""The JSON of the cluster's state: the controller seat, brokers, topics, partitions, producer ids.

Each value is a frozen dataclass with `encode()` and a strict `decode()`; the shapes follow
Kafka's, so its knowledge and tools carry over.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from .codec import ZkDataError, dump_json, int_field, int_list, load_json, partition_map
from .paths import CONTROLLER, CONTROLLER_EPOCH, PRODUCER_ID_BLOCK, broker_path, topic_config_path, topic_path

# --- /controller and /controller_epoch -----------------------------------------

@dataclass(frozen=True)
class ControllerRecord:
    """Who holds the controller seat, and where brokers reach its ControllerService."""

    controller_id: int
    timestamp_ms: int
    host: str = ""
    port: int = 0

    def encode(self) -> bytes:
        return dump_json({
            "version": 1,
            "controller_id": self.controller_id,
            "timestamp": str(self.timestamp_ms),
            "host": self.host,
            "port": self.port,
        })

    @staticmethod
    def decode(data: bytes, path: str = CONTROLLER) -> "ControllerRecord":
        value = load_json(data, path)
        return ControllerRecord(
            int_field(value, "controller_id", path),
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
    # (topic, partition) whose committed records this broker's recovery could not find after an unclean
    # shutdown, until it has caught up again: the controller elects it cleanly only when no other ISR
    # member can lead (docs/durability.md).
    lost_partitions: tuple[tuple[str, int], ...] = ()
    # The broker's log directories, and those a storage error took offline since it started (issue 40);
    # `offline_partitions` are the replicas that lived in them: the controller keeps them out of every
    # ISR and election until the broker registers again.
    log_dirs: tuple[str, ...] = ()
    offline_log_dirs: tuple[str, ...] = ()
    offline_partitions: tuple[tuple[str, int], ...] = ()
    # The broker started without the clean-shutdown marker: its logs may have lost records it had, so the
    # controller takes it out of every ELR (KIP-966). Absent (False) in registrations of older brokers.
    unclean_start: bool = False
    # The broker's `min_insync_replicas`, the min.insync.replicas its leaders enforce for topics without their
    # own: the controller takes the lowest of the live brokers' for its ELR rules (controller/core/elr.py).
    # Absent (1) in registrations of older brokers.
    min_insync_replicas_default: int = 1
    # The port of the broker's Kafka wire-protocol listener on `host` (0: it runs none). Absent (0) in
    # registrations of older brokers.
    kafka_port: int = 0

    def encode(self) -> bytes:
        return dump_json({
            "version": 7,
            "host": self.host,
            "port": self.port,
            "rack": self.rack,
            "endpoints": [f"GRPC://{self.host}:{self.port}"]
            + ([f"KAFKA://{self.host}:{self.kafka_port}"] if self.kafka_port else []),
            "metrics_port": self.metrics_port,
            "timestamp": str(self.timestamp_ms),
            "lost_committed_records": [{"topic": topic, "partition": partition}
                                       for topic, partition in sorted(self.lost_partitions)],
            "log_dirs": list(self.log_dirs),
            "offline_log_dirs": list(self.offline_log_dirs),
            "offline_partitions": [{"topic": topic, "partition": partition}
                                   for topic, partition in sorted(self.offline_partitions)],
            "unclean_start": self.unclean_start,
            "min_insync_replicas": self.min_insync_replicas_default,
            "kafka_port": self.kafka_port,
        })

    @staticmethod
    def decode(broker_id: int, data: bytes) -> "BrokerRegistration":
        path = broker_path(broker_id)
        value = load_json(data, path)
        host = value.get("host")
        if not isinstance(host, str) or not host:
            raise ZkDataError(f"{path}: 'host' must be a non-empty string")
        rack = value.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ZkDataError(f"{path}: 'rack' must be a string or null")
        lost = value.get("lost_committed_records", [])  # absent in registrations of older brokers
        if not isinstance(lost, list) or not all(
                isinstance(item, dict) and isinstance(item.get("topic"), str)
                and isinstance(item.get("partition"), int) for item in lost):
            raise ZkDataError(f"{path}: 'lost_committed_records' must be a list of {{topic, partition}}")
        offline = value.get("offline_partitions", [])
        if not _is_partition_list(offline):
            raise ZkDataError(f"{path}: 'offline_partitions' must be a list of {{topic, partition}}")
        dirs, offline_dirs = value.get("log_dirs", []), value.get("offline_log_dirs", [])
        if not all(isinstance(item, list) and all(isinstance(d, str) for d in item) for item in (dirs, offline_dirs)):
            raise ZkDataError(f"{path}: 'log_dirs' and 'offline_log_dirs' must be lists of strings")
        unclean_start = value.get("unclean_start", False)
        if not isinstance(unclean_start, bool):
            raise ZkDataError(f"{path}: 'unclean_start' must be true or false")
        min_insync_replicas = value.get("min_insync_replicas", 1)
        if type(min_insync_replicas) is not int or min_insync_replicas < 1:
            raise ZkDataError(f"{path}: 'min_insync_replicas' must be an integer of at least 1")
        kafka_port = value.get("kafka_port", 0)
        if type(kafka_port) is not int or not 0 <= kafka_port <= 65535:
            raise ZkDataError(f"{path}: 'kafka_port' must be a port number (0: none)")
        return BrokerRegistration(
            broker_id=broker_id,
            host=host,
            port=int_field(value, "port", path),
            rack=rack or None,
            metrics_port=int(value.get("metrics_port", 0) or 0),
            timestamp_ms=int(value.get("timestamp", 0) or 0),
            lost_partitions=tuple((item["topic"], item["partition"]) for item in lost),
            log_dirs=tuple(dirs),
            offline_log_dirs=tuple(offline_dirs),
            offline_partitions=tuple((item["topic"], item["partition"]) for item in offline),
            unclean_start=unclean_start,
            min_insync_replicas_default=min_insync_replicas,
            kafka_port=kafka_port,
        )


def _is_partition_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) and isinstance(item.get("topic"), str)
                                           and isinstance(item.get("partition"), int) for item in value)


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

        return dump_json({
            "version": 2,
            "partitions": as_json(self.partitions),
            "adding_replicas": as_json(self.adding_replicas),
            "removing_replicas": as_json(self.removing_replicas),
        })

    @staticmethod
    def decode(topic: str, data: bytes) -> "TopicAssignment":
        path = topic_path(topic)
        value = load_json(data, path)
        partitions = partition_map(value.get("partitions"), "partitions", path)
        if not partitions:
            raise ZkDataError(f"{path}: 'partitions' is empty")
        return TopicAssignment(
            partitions=partitions,
            adding_replicas=partition_map(value.get("adding_replicas"), "adding_replicas", path),
            removing_replicas=partition_map(value.get("removing_replicas"), "removing_replicas", path),
        )


# --- partition state ----------------------------------------------------------------

@dataclass(frozen=True)
class PartitionStateRecord:
    """Leader, leader epoch and ISR of one partition; the znode version is its partition epoch.

    `unclean_leader_epoch`: the leader epoch an unclean election began (a leader from outside the
    ISR, which may lack committed records), -1 if none ever did; written only when set. While it
    equals `leader_epoch`, the leader in office is that unclean one.

    `elr`: the eligible leader replicas (KIP-966): replicas outside the ISR that held every committed
    record when the ISR fell below min.insync.replicas; written only when non-empty, so a state without
    the key (every state older brokers and controllers wrote) reads as an empty ELR."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    unclean_leader_epoch: int = -1
    elr: tuple[int, ...] = ()

    def encode(self) -> bytes:
        # The same bytes as dump_json of the fields (sorted keys, no spaces), formatted directly:
        # the controller writes 10K of these per broker failover (docs/perf/zookeeper-partition-state-json.md).
        unclean = self.unclean_leader_epoch
        elr = self.elr
        if not all(type(v) is int for v in (self.controller_epoch, self.leader, self.leader_epoch, unclean,
                                            *self.isr, *elr)):
            return dump_json({"version": 1, "controller_epoch": self.controller_epoch, "leader": self.leader,
                              "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                              **({"elr": list(elr)} if elr else {}),
                              **({"unclean_leader_epoch": unclean} if unclean != -1 else {})})
        return (f'{{"controller_epoch":{self.controller_epoch},'
                + (f'"elr":[{",".join(map(str, elr))}],' if elr else "")
                + f'"isr":[{",".join(map(str, self.isr))}],'
                f'"leader":{self.leader},"leader_epoch":{self.leader_epoch},'
                + (f'"unclean_leader_epoch":{unclean},' if unclean != -1 else "") + '"version":1}').encode()

    @staticmethod
    def decode(data: bytes, path: str = "partition state") -> "PartitionStateRecord":
        # The hot path of a controller failover (100K of these): check the exact types inline and
        # fall back to the descriptive checks only on a mismatch (docs/perf/zookeeper-partition-state-json.md).
        try:
            value = json.loads(data)
            leader, leader_epoch = value["leader"], value["leader_epoch"]
            isr, controller_epoch = value["isr"], value["controller_epoch"]
            unclean = value.get("unclean_leader_epoch", -1)
            elr = value.get("elr", ())
            if (type(value["version"]) is int and type(leader) is int and type(leader_epoch) is int
                    and type(controller_epoch) is int and type(isr) is list and type(unclean) is int
                    and all(type(b) is int for b in isr) and (not elr or (type(elr) is list
                                                                         and all(type(b) is int for b in elr)))):
                return PartitionStateRecord(leader, leader_epoch, tuple(isr), controller_epoch, unclean, tuple(elr))
        except (ValueError, KeyError, TypeError):
            pass
        value = load_json(data, path)
        return PartitionStateRecord(
            leader=int_field(value, "leader", path),
            leader_epoch=int_field(value, "leader_epoch", path),
            isr=int_list(value.get("isr"), "'isr'", path),
            controller_epoch=int_field(value, "controller_epoch", path),
            unclean_leader_epoch=int_field(value, "unclean_leader_epoch", path)
            if "unclean_leader_epoch" in value else -1,
            elr=int_list(value.get("elr", []), "'elr'", path),
        )


# --- /config/topics/<topic> ------------------------------------------------------------

@dataclass(frozen=True)
class TopicConfigRecord:
    config: Mapping[str, str]

    def encode(self) -> bytes:
        return dump_json({"version": 1, "config": dict(sorted(self.config.items()))})

    @staticmethod
    def decode(topic: str, data: bytes) -> "TopicConfigRecord":
        path = topic_config_path(topic)
        value = load_json(data, path)
        config = value.get("config", {})
        if not isinstance(config, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in config.items()):
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
        return dump_json({
            "version": 1,
            "broker": self.broker_id,
            "block_start": str(self.block_start),
            "block_end": str(self.block_end),
        })

    @staticmethod
    def decode(data: bytes, path: str = PRODUCER_ID_BLOCK) -> "ProducerIdBlock":
        value = load_json(data, path)
        try:
            return ProducerIdBlock(int_field(value, "broker", path), int(value["block_start"]), int(value["block_end"]))
        except (KeyError, ValueError):
            raise ZkDataError(f"{path}: needs numeric 'block_start' and 'block_end'") from None

