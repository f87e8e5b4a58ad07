"""A standby controller's copy of the cluster state, against a real ZooKeeper: what it
hands over on taking the seat equals a full load at that moment."""

from __future__ import annotations

import time

import pytest

from replog.common.zk import schema
from replog.controller.adapters import standby_mirror
from replog.controller.adapters.loader import load_snapshot
from replog.controller.adapters.standby_mirror import StandbyMirror

from .controller_helpers import create_topic, wait_for

pytestmark = pytest.mark.integration


def write_state(zk, topic, partition, leader, isr, leader_epoch=0):
    path = schema.partition_state_path(topic, partition)
    data = schema.PartitionStateRecord(leader, leader_epoch, tuple(isr), 1).encode()
    if zk.kazoo.exists(path):
        zk.kazoo.set(path, data)
    else:
        zk.kazoo.create(path, data, makepath=True)


def same(a, b):
    fields = ("live_brokers", "assignments", "partition_states", "topic_configs", "topics_being_deleted",
              "reassignment_requests")
    for name in fields:
        assert getattr(a, name) == getattr(b, name), name


@pytest.fixture
def fast_refresh(monkeypatch):
    monkeypatch.setattr(standby_mirror, "REFRESH_INTERVAL_S", 0.1)


def test_the_copy_taken_equals_a_full_load_after_every_kind_of_change(zk_client, fast_refresh):
    zk = zk_client
    create_topic(zk, "kept", {0: (1, 2), 1: (2, 1)}, {"retention.ms": "1000"})
    create_topic(zk, "gone", {0: (1, 2)})
    for p in (0, 1):
        write_state(zk, "kept", p, p + 1, (1, 2))
    write_state(zk, "gone", 0, 1, (1, 2))
    zk.kazoo.create(schema.broker_path(1), schema.BrokerRegistration(1, "h", 9092).encode(), ephemeral=True,
                    acl=zk.acl(schema.broker_path(1)))  # broker 1's own ACL, which the controller checks

    mirror = StandbyMirror(zk.endpoint)
    mirror.start()
    try:
        # Loaded; what follows is seen only through the feed (or at take-over).
        wait_for(lambda: mirror.topics() == {"kept", "gone"}, 10, "the mirror's first full copy")
        write_state(zk, "kept", 0, 2, (2,), leader_epoch=1)  # an ISR change of the old controller
        create_topic(zk, "new", {0: (2, 1), 1: (1, 2)}, {"min.insync.replicas": "2"})
        write_state(zk, "new", 0, 2, (2, 1))  # one partition started, the other not yet
        zk.kazoo.delete(schema.topic_path("gone"), recursive=True)
        zk.kazoo.delete(schema.topic_config_path("gone"))
        zk.kazoo.set(schema.topic_config_path("kept"),
                     schema.TopicConfigRecord({"retention.ms": "5", "min.insync.replicas": "2"}).encode())
        zk.kazoo.create(schema.delete_topic_path("kept"))
        # Some changes are refreshed before the take-over (a refresh has brought "new" in), some only at it.
        wait_for(lambda: "new" in mirror.topics(), 10, "a refresh that brings in the new topic")
        write_state(zk, "kept", 1, 1, (1,), leader_epoch=3)
        taken = mirror.take(7, 9)
    finally:
        mirror.close()
    assert taken is not None
    loaded = load_snapshot(zk.endpoint, 7, 9)
    same(taken, loaded)
    assert set(taken.assignments) == {("kept", 0), ("kept", 1), ("new", 0), ("new", 1)}
    assert taken.partition_states[("kept", 1)].leader_epoch == 3
    assert ("new", 1) not in taken.partition_states
    assert taken.topic_configs["kept"].min_insync_replicas == 2 and "gone" not in taken.topic_configs
    assert taken.topics_being_deleted == frozenset({"kept"}) and set(taken.live_brokers) == {1}


def test_a_broken_feed_means_no_copy_until_everything_is_loaded_again(zk_client, fast_refresh, monkeypatch):
    monkeypatch.setattr(standby_mirror, "RETRY_INTERVAL_S", 0.1)
    zk = zk_client
    create_topic(zk, "t", {0: (1,)})
    write_state(zk, "t", 0, 1, (1,))
    mirror = StandbyMirror(zk.endpoint)
    mirror.start()
    try:
        assert mirror.take(1, 1) is not None
        mirror._feed._sock.shutdown(2)  # the session is gone: changes may be missed from here on
        write_state(zk, "t", 0, 1, (1,), leader_epoch=4)
        deadline = time.monotonic() + 10
        taken = None
        while time.monotonic() < deadline:
            taken = mirror.take(1, 1)  # None while the copy is lost, then a fresh full load
            if taken is not None and taken.partition_states[("t", 0)].leader_epoch == 4:
                break
            time.sleep(0.05)
    finally:
        mirror.close()
    assert taken is not None and taken.partition_states[("t", 0)].leader_epoch == 4


def test_an_unreadable_znode_means_no_copy_rather_than_a_partial_one(zk_client, fast_refresh):
    zk = zk_client
    create_topic(zk, "t", {0: (1,), 1: (1,)})
    write_state(zk, "t", 0, 1, (1,))
    zk.kazoo.create(schema.partition_state_path("t", 1), b"not json", makepath=True)
    mirror = StandbyMirror(zk.endpoint)
    mirror.start()
    try:
        assert mirror.take(1, 1) is None  # the controller then loads everything itself
    finally:
        mirror.close()
