"""Reads a ClusterView from ZooKeeper with the bulk reader (batched MultiReads, bulk.py).

Three rounds on one short session (synced first, so the reads see every write
committed before the call): the children lists, then the singletons, broker
registrations, assignments and configs, then the partition states.

A znode that vanishes between rounds (a topic deleted meanwhile) is left out;
the snapshot is as consistent as reads on one ZooKeeper session are.
"""

from __future__ import annotations

from typing import Collection

from replog.common.topic_admin.core.model import NO_ZNODE, ClusterView, TopicView
from replog.common.zk import bulk, schema
from replog.common.zk.auth import ZkEndpoint

_SINGLETONS = (schema.CONTROLLER, schema.CONTROLLER_EPOCH, schema.REASSIGN_PARTITIONS, schema.REASSIGNMENT_THROTTLE)


def load_view(
    connect: ZkEndpoint,
    *,
    topics: Collection[str] | None = None,
    states: bool | Collection[str] = False,
) -> ClusterView:
    """Snapshot of the cluster; `topics` None loads every topic; `states` True loads
    every loaded topic's partition states, a collection loads only those topics'."""
    with bulk.BulkReader(connect) as reader:
        reader.sync()
        ids, names, deleting = (c or [] for c in reader.children_many(
            [schema.BROKER_IDS, schema.TOPICS, schema.DELETE_TOPICS]))
        broker_ids = sorted(int(i) for i in ids if i.isdigit())
        wanted = sorted(names) if topics is None else sorted(set(topics) & set(names))
        paths = [*_SINGLETONS, *(schema.broker_path(b) for b in broker_ids)]
        paths += [schema.topic_path(t) for t in wanted] + [schema.topic_config_path(t) for t in wanted]
        found = reader.get_many(paths)
        singles, found = found[:len(_SINGLETONS)], found[len(_SINGLETONS):]
        registrations, found = found[:len(broker_ids)], found[len(broker_ids):]
        assignments, configs = found[:len(wanted)], found[len(wanted):]
        topic_views = _topics(wanted, assignments, configs, set(deleting))
        with_states = [t for t in topic_views if states is True or (states and t in states)]
        state_paths = [(t, p) for t in with_states for p in sorted(topic_views[t].assignment.partitions)]
        paths = [schema.partition_state_path(t, p) for t, p in state_paths]
        state_values = reader.get_many(paths)
    _attach_states(topic_views, state_paths, paths, state_values)
    return _view(singles, broker_ids, registrations, topic_views, names, deleting)


def _topics(wanted, assignments, configs, deleting: set[str]) -> dict[str, TopicView]:
    views = {}
    for name, assignment, config in zip(wanted, assignments, configs):
        if assignment is None:
            continue
        overrides, config_version = {}, NO_ZNODE
        if config is not None:
            overrides = dict(schema.TopicConfigRecord.decode(name, config[0]).config)
            config_version = config[1].version
        views[name] = TopicView(
            name=name,
            assignment=schema.TopicAssignment.decode(name, assignment[0]),
            assignment_version=assignment[1].version,
            config_overrides=overrides,
            config_version=config_version,
            deleting=name in deleting,
        )
    return views


def _attach_states(topic_views, state_paths, paths, state_values) -> None:
    by_topic: dict[str, dict] = {}
    for (topic, partition), path, found in zip(state_paths, paths, state_values):
        if found is not None:
            by_topic.setdefault(topic, {})[partition] = schema.PartitionStateRecord.decode(found[0], path)
    for topic, states in by_topic.items():
        view = topic_views[topic]
        topic_views[topic] = TopicView(
            view.name, view.assignment, view.assignment_version, view.config_overrides,
            view.config_version, states, view.deleting,
        )


def _view(singles, broker_ids, registrations, topic_views, names, deleting) -> ClusterView:
    controller, controller_epoch, reassignment, throttle = singles
    brokers = {
        b: schema.BrokerRegistration.decode(b, found[0])
        for b, found in zip(broker_ids, registrations) if found is not None
    }
    return ClusterView(
        controller_id=schema.ControllerRecord.decode(controller[0]).controller_id if controller else -1,
        controller_epoch=schema.decode_controller_epoch(controller_epoch[0]) if controller_epoch else 0,
        brokers=brokers,
        topics=topic_views,
        topic_names=frozenset(names),
        deleting_topics=frozenset(deleting),
        reassignment=schema.ReassignmentRequest.decode(reassignment[0]) if reassignment else None,
        reassignment_version=reassignment[1].version if reassignment else NO_ZNODE,
        throttle_bytes_per_s=schema.ReassignmentThrottle.decode(throttle[0]).bytes_per_s if throttle else 0,
        throttle_version=throttle[1].version if throttle else NO_ZNODE,
    )
