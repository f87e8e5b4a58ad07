"""Load the whole cluster from ZooKeeper into a `ClusterSnapshot` (seed D step 3).

Uses the pipelined bulk reader over several sessions, because reading 100K
partition states one call at a time is the slowest part of a failover. The
partition epoch of each partition is its state znode's version; a broker's
epoch is its registration znode's czxid.
"""

from __future__ import annotations

import logging
import time

from replog.common.zk import bulk, schema
from replog.controller.core.model import (
    BrokerInfo,
    ClusterSnapshot,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
)
from replog.controller.core.topic_config import TopicConfig

log = logging.getLogger(__name__)


def read_live_brokers(connect: str) -> dict[int, BrokerInfo]:
    ids = bulk.children_many(connect, [schema.BROKER_IDS], sessions=1)[0] or []
    ids = sorted(int(i) for i in ids if i.isdigit())
    found = bulk.get_many(connect, [schema.broker_path(i) for i in ids], sessions=1)
    brokers: dict[int, BrokerInfo] = {}
    for broker_id, item in zip(ids, found):
        if item is None:
            continue  # gone between the listing and the read
        registration = schema.BrokerRegistration.decode(broker_id, item[0])
        brokers[broker_id] = BrokerInfo(broker_id, registration.host, registration.port, registration.rack,
                                        item[1].czxid)
    return brokers


def read_topic_configs(connect: str, topics: list[str]) -> dict[str, TopicConfig]:
    configs: dict[str, TopicConfig] = {}
    found = bulk.get_many(connect, [schema.topic_config_path(t) for t in topics])
    for topic, item in zip(topics, found):
        if item is None:
            continue
        try:
            configs[topic] = TopicConfig.from_map(schema.TopicConfigRecord.decode(topic, item[0]).config)
        except Exception as exc:  # noqa: BLE001 - a bad config must not stop the controller
            log.error("ignoring invalid config of topic %s: %s", topic, exc)
    return configs


def assignment_from_record(record: schema.TopicAssignment) -> dict[int, ReplicaAssignment]:
    return {
        p: ReplicaAssignment(tuple(replicas), tuple(record.adding_replicas.get(p, ())),
                             tuple(record.removing_replicas.get(p, ())))
        for p, replicas in record.partitions.items()
    }


def read_reassignment_request(data: bytes | None) -> dict[TopicPartition, tuple[int, ...] | None]:
    if not data:
        return {}
    request = schema.ReassignmentRequest.decode(data)
    return {TopicPartition(t, p): (tuple(r) if r else None) for (t, p), r in request.targets.items()}


def load_snapshot(connect: str, controller_id: int, controller_epoch: int) -> ClusterSnapshot:
    started = time.monotonic()
    brokers = read_live_brokers(connect)
    topics, deleting = bulk.children_many(connect, [schema.TOPICS, schema.DELETE_TOPICS], sessions=1)
    topics = sorted(topics or [])
    assignments: dict[TopicPartition, ReplicaAssignment] = {}
    for topic, item in zip(topics, bulk.get_many(connect, [schema.topic_path(t) for t in topics])):
        if item is None:
            continue
        try:
            record = schema.TopicAssignment.decode(topic, item[0])
        except schema.ZkDataError as exc:
            log.error("ignoring topic with an unreadable assignment: %s", exc)
            continue
        for p, replica_assignment in assignment_from_record(record).items():
            assignments[TopicPartition(topic, p)] = replica_assignment
    keys = list(assignments)
    states: dict[TopicPartition, LeaderAndIsr] = {}
    found = bulk.get_many(connect, [schema.partition_state_path(tp.topic, tp.partition) for tp in keys])
    for tp, item in zip(keys, found):
        if item is None:
            continue  # created by the controller on Startup (a topic whose creation was cut short)
        record = schema.PartitionStateRecord.decode(item[0], schema.partition_state_path(*tp))
        states[tp] = LeaderAndIsr(record.leader, record.leader_epoch, tuple(record.isr),
                                  record.controller_epoch, item[1].version)
    reassign = bulk.get_many(connect, [schema.REASSIGN_PARTITIONS], sessions=1)[0]
    snapshot = ClusterSnapshot(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        live_brokers=brokers,
        assignments=assignments,
        partition_states=states,
        topic_configs=read_topic_configs(connect, topics),
        topics_being_deleted=frozenset(deleting or ()),
        reassignment_requests=read_reassignment_request(reassign[0] if reassign else None),
    )
    log.info("loaded %d brokers, %d topics, %d partitions from ZooKeeper in %.2f s",
             len(brokers), len(topics), len(assignments), time.monotonic() - started)
    return snapshot
