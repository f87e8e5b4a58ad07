"""The simulated ZooKeeper keeps ZooKeeper's rules: sessions, ephemerals, one-shot watches, versions, multi."""

from __future__ import annotations

import pytest

from replog.common.clock import ManualClock
from tests.scenario.sim_zookeeper import (
    CHANGED,
    CHILDREN,
    CREATED,
    DELETED,
    EXPIRED,
    BadVersion,
    Check,
    Create,
    Delete,
    MultiFailed,
    NodeExists,
    NoNode,
    NotEmpty,
    Notification,
    SessionExpired,
    SetData,
    SimZooKeeper,
)


def zookeeper(timeout_ms: int = 1_000) -> tuple[SimZooKeeper, ManualClock]:
    clock = ManualClock()
    return SimZooKeeper(clock, session_timeout_ms=timeout_ms), clock


def drained(zk: SimZooKeeper) -> list[Notification]:
    out = []
    while (n := zk.take_notification()) is not None:
        out.append(n)
    return out


def test_create_get_set_delete_with_versions():
    zk, _ = zookeeper()
    s = zk.open_session("a")
    zk.create(s, "/x", b"1")
    assert zk.get(s, "/x") == (b"1", zk.get(s, "/x")[1]) and zk.get(s, "/x")[1].version == 0
    assert zk.set(s, "/x", b"2", 0).version == 1
    with pytest.raises(BadVersion):
        zk.set(s, "/x", b"3", 0)
    assert zk.get(s, "/x")[0] == b"2"
    assert zk.set(s, "/x", b"4").version == 2  # any version
    with pytest.raises(BadVersion):
        zk.delete(s, "/x", 1)
    zk.delete(s, "/x", 2)
    assert zk.exists(s, "/x") is None


def test_missing_parents_existing_nodes_and_children():
    zk, _ = zookeeper()
    s = zk.open_session("a")
    with pytest.raises(NoNode):
        zk.create(s, "/a/b")
    with pytest.raises(NoNode):
        zk.get(s, "/nothing")
    with pytest.raises(NoNode):
        zk.set(s, "/nothing", b"")
    zk.ensure_path(s, "/a/b")
    with pytest.raises(NodeExists):
        zk.create(s, "/a/b")
    zk.create(s, "/a/c")
    assert zk.get_children(s, "/a") == ["b", "c"]
    with pytest.raises(NotEmpty):
        zk.delete(s, "/a")


def test_each_create_has_a_new_higher_czxid():
    zk, _ = zookeeper()
    s = zk.open_session("a")
    zk.create(s, "/x")
    first = zk.get(s, "/x")[1].czxid
    zk.delete(s, "/x")
    zk.create(s, "/x")
    assert zk.get(s, "/x")[1].czxid > first


def test_an_untouched_session_expires_and_takes_its_ephemerals():
    zk, clock = zookeeper(timeout_ms=1_000)
    owner, other = zk.open_session("owner"), zk.open_session("other")
    zk.ensure_path(other, "/brokers/ids")
    zk.create(owner, "/brokers/ids/1", b"r", ephemeral=True)
    zk.create(owner, "/kept", b"p")
    assert zk.get(other, "/brokers/ids/1")[1].ephemeral_owner == owner
    clock.advance(900)
    zk.touch(other)
    assert zk.expire_due() == []
    clock.advance(200)  # owner unheard for 1,100 ms; other for 200 ms
    zk.touch(other)
    assert zk.expire_due() == [owner]
    assert zk.expiries == 1 and not zk.alive(owner) and zk.alive(other)
    assert zk.get_children(other, "/brokers/ids") == []
    assert zk.exists(other, "/kept") is not None  # persistent znodes stay
    with pytest.raises(SessionExpired):
        zk.create(owner, "/late")
    assert Notification(owner, EXPIRED, "") in drained(zk)


def test_any_request_counts_as_a_heartbeat():
    zk, clock = zookeeper(timeout_ms=1_000)
    s = zk.open_session("a")
    for _ in range(5):
        clock.advance(800)
        zk.exists(s, "/")
        assert zk.expire_due() == []


def test_closing_a_session_removes_its_ephemerals_at_once_without_an_expiry():
    zk, _ = zookeeper()
    owner, watcher = zk.open_session("owner"), zk.open_session("watcher")
    zk.create(owner, "/controller", b"1", ephemeral=True)
    zk.exists(watcher, "/controller", watch=True)
    zk.close_session(owner)
    assert zk.exists(watcher, "/controller") is None and zk.expiries == 0
    assert drained(zk) == [Notification(watcher, DELETED, "/controller")]


def test_watches_fire_once_and_queue_in_order():
    zk, _ = zookeeper()
    a, b = zk.open_session("a"), zk.open_session("b")
    zk.create(a, "/x", b"0")
    zk.get(b, "/x", watch=True)
    zk.get_children(b, "/", watch=True)
    zk.exists(a, "/y", watch=True)
    zk.set(a, "/x", b"1")
    zk.set(a, "/x", b"2")  # the data watch already fired: nothing more
    zk.create(a, "/y")
    assert drained(zk) == [
        Notification(b, CHANGED, "/x"),
        Notification(a, CREATED, "/y"),
        Notification(b, CHILDREN, "/"),
    ]
    zk.delete(a, "/y")
    assert drained(zk) == []  # every watch was one-shot


def test_an_expired_sessions_watches_never_fire():
    zk, clock = zookeeper(timeout_ms=100)
    a, b = zk.open_session("a"), zk.open_session("b")
    zk.create(b, "/x")
    zk.get(a, "/x", watch=True)
    clock.advance(150)
    zk.touch(b)
    zk.expire_due()
    zk.set(b, "/x", b"1")
    assert drained(zk) == [Notification(a, EXPIRED, "")]


def test_multi_is_all_or_nothing_and_checks_versions():
    zk, _ = zookeeper()
    s = zk.open_session("a")
    zk.create(s, "/controller_epoch", b"1")
    zk.create(s, "/state", b"a")
    fence = Check("/controller_epoch", 0)
    zk.multi(s, [fence, SetData("/state", b"b", 0), Create("/state/child", b"c")])
    assert zk.get(s, "/state")[0] == b"b" and zk.get(s, "/state")[1].version == 1
    zk.set(s, "/controller_epoch", b"2")  # another controller took the seat
    with pytest.raises(MultiFailed) as failed:
        zk.multi(s, [fence, SetData("/state", b"c", 1)])
    assert failed.value.index == 0 and isinstance(failed.value.error, BadVersion)
    with pytest.raises(MultiFailed) as failed:
        zk.multi(s, [SetData("/state", b"d", 1), Create("/other"), Create("/other")])
    assert failed.value.index == 2 and isinstance(failed.value.error, NodeExists)
    assert zk.get(s, "/state")[0] == b"b" and zk.exists(s, "/other") is None  # nothing applied


def test_multi_sees_its_own_earlier_operations():
    zk, _ = zookeeper()
    s = zk.open_session("a")
    zk.multi(s, [Create("/t"), Create("/t/p"), SetData("/t/p", b"x", 0), Check("/t/p", 1)])
    assert zk.get(s, "/t/p")[1].version == 1
    zk.multi(s, [Delete("/t/p"), Delete("/t")])
    assert zk.exists(s, "/t") is None
    with pytest.raises(MultiFailed):
        zk.multi(s, [Create("/u"), Delete("/u"), Check("/u", 0)])
