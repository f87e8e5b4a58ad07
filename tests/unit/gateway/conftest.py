"""Builders of ClusterView snapshots for the gateway core's tests."""

from __future__ import annotations

import pytest

from replog.common.topic_admin.core.model import ClusterView, TopicView
from replog.common.zk.schema import BrokerRegistration, PartitionStateRecord, ReassignmentRequest, TopicAssignment


def _view(brokers=(1, 2, 3), racks=None, topics=None, reassignment=None, deleting=(), min_isr=None):
    """brokers: live ids; min_isr: broker id -> its default min.insync.replicas (1 if not given); topics: name -> {"partitions": {p: replicas}, "states": {p: (leader, isr)},
    "configs": {...}, "adding": {...}, "removing": {...}}."""
    registrations = {
        b: BrokerRegistration(b, "127.0.0.1", 9000 + b, rack=(racks or {}).get(b),
                              min_insync_replicas_default=(min_isr or {}).get(b, 1)) for b in brokers
    }
    views = {}
    for name, spec in (topics or {}).items():
        views[name] = TopicView(
            name=name,
            assignment=TopicAssignment(
                {p: tuple(r) for p, r in spec["partitions"].items()},
                adding_replicas={p: tuple(r) for p, r in spec.get("adding", {}).items()},
                removing_replicas={p: tuple(r) for p, r in spec.get("removing", {}).items()},
            ),
            assignment_version=0,
            config_overrides=spec.get("configs", {}),
            states={p: PartitionStateRecord(leader, 1, tuple(isr), 1) for p, (leader, isr) in spec.get("states", {}).items()},
            deleting=name in deleting,
        )
    return ClusterView(
        controller_id=1, controller_epoch=1, brokers=registrations, topics=views,
        topic_names=frozenset(views), deleting_topics=frozenset(deleting),
        reassignment=ReassignmentRequest(reassignment) if reassignment is not None else None,
        reassignment_version=0 if reassignment is not None else -1,
    )


@pytest.fixture
def make_view():
    return _view
