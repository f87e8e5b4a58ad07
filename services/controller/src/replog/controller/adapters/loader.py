"""Load the whole cluster from ZooKeeper into a `ClusterSnapshot` (seed D step 3).

Uses the bulk reader (batched MultiReads, bulk.py), because reading 100K
partition states one call at a time is the slowest part of a failover. The
partition epoch of each partition is its state znode's version; a broker's
epoch is its registration znode's czxid.
"""

from __future__ import annotations

import logging
import time

from replog.common.core.partitions import TopicPartition
from replog.common.zk import bulk, schema
from replog.common.zk.auth import ZkEndpoint
from replog.controller.adapters import registrations
from replog.controller.core.model import (
    BrokerInfo,
    ClusterSnapshot,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicElectionConfig,
)

log = logging.getLogger(__name__)


def read_live_brokers(connect: ZkEndpoint) -> dict[int, BrokerInfo]:
    """The registered brokers, each registration's ACL checked (registrations.py)."""
    with bulk.BulkReader(connect) as reader:
        reader.sync()
        ids = reader.children_many([schema.BROKER_IDS])[0] or []
        ids = sorted(int(i) for i in ids if i.isdigit())
        paths = [schema.broker_path(i) for i in ids]
        acl_entries = reader.get_acls(paths) if connect.credentials is not None else [None] * len(ids)
        # Any broker may create a child here, with an ACL that keeps the controller out: skipped, not fatal.
        found = reader.get_many(paths, unreadable_as_missing=True)
    brokers: dict[int, BrokerInfo] = {}
    for broker_id, item, entries in zip(ids, found, acl_entries):
        if not registrations.believed(broker_id, entries, connect.credentials) or item is None:
            continue  # refused (and logged), or gone between the listing and the read
        registration = schema.BrokerRegistration.decode(broker_id, item[0])
        brokers[broker_id] = registrations.broker_info(registration, item[1].czxid)
    return brokers


def read_topic_configs(connect: ZkEndpoint, topics: list[str]) -> dict[str, TopicElectionConfig]:
    configs: dict[str, TopicElectionConfig] = {}
    found = bulk.get_many(connect, [schema.topic_config_path(t) for t in topics])
    for topic, item in zip(topics, found):
        if item is None:
            continue
        try:
            configs[topic] = TopicElectionConfig.from_map(schema.TopicConfigRecord.decode(topic, item[0]).config)
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


def read_assignments(connect: ZkEndpoint, topics: list[str]) -> dict[str, dict[int, ReplicaAssignment] | None]:
    """Each topic's assignment; None for a topic gone or unreadable."""
    out: dict[str, dict[int, ReplicaAssignment] | None] = {}
    for topic, item in zip(topics, bulk.get_many(connect, [schema.topic_path(t) for t in topics])):
        out[topic] = None
        if item is None:
            continue
        try:
            out[topic] = assignment_from_record(schema.TopicAssignment.decode(topic, item[0]))
        except schema.ZkDataError as exc:
            log.error("ignoring topic with an unreadable assignment: %s", exc)
    return out


def read_partition_states(connect: ZkEndpoint, keys: list[TopicPartition]) -> dict[TopicPartition, LeaderAndIsr | None]:
    """Each partition's state; None where it does not exist (yet)."""
    found = bulk.get_many(connect, [schema.partition_state_path(tp.topic, tp.partition) for tp in keys])
    states: dict[TopicPartition, LeaderAndIsr | None] = {}
    for tp, item in zip(keys, found):
        if item is None:
            states[tp] = None  # created by the controller on Startup (a topic whose creation was cut short)
            continue
        record = schema.PartitionStateRecord.decode(item[0], schema.partition_state_path(*tp))
        states[tp] = LeaderAndIsr(record.leader, record.leader_epoch, tuple(record.isr),
                                  record.controller_epoch, item[1].version, record.unclean_leader_epoch,
                                  tuple(record.elr))
    return states


def read_cluster_rest(connect: ZkEndpoint) -> tuple[dict[int, BrokerInfo], frozenset[str], dict]:
    """The small part of the state, always read afresh: live brokers, deletions, reassignment requests."""
    brokers = read_live_brokers(connect)
    deleting = bulk.children_many(connect, [schema.DELETE_TOPICS])[0]
    reassign = bulk.get_many(connect, [schema.REASSIGN_PARTITIONS])[0]
    return brokers, frozenset(deleting or ()), read_reassignment_request(reassign[0] if reassign else None)


def load_snapshot(connect: ZkEndpoint, controller_id: int, controller_epoch: int) -> ClusterSnapshot:
    started = time.monotonic()
    brokers, deleting, reassignments = read_cluster_rest(connect)
    topics = sorted(bulk.children_many(connect, [schema.TOPICS])[0] or [])
    assignments: dict[TopicPartition, ReplicaAssignment] = {}
    for topic, partitions in read_assignments(connect, topics).items():
        for p, replica_assignment in (partitions or {}).items():
            assignments[TopicPartition(topic, p)] = replica_assignment
    states = {tp: s for tp, s in read_partition_states(connect, list(assignments)).items() if s is not None}
    snapshot = ClusterSnapshot(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        live_brokers=brokers,
        assignments=assignments,
        partition_states=states,
        topic_configs=read_topic_configs(connect, topics),
        topics_being_deleted=deleting,
        reassignment_requests=reassignments,
    )
    log.info("loaded %d brokers, %d topics, %d partitions from ZooKeeper in %.2f s",
             len(brokers), len(topics), len(assignments), time.monotonic() - started)
    return snapshot
