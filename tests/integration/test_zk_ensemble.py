"""The wire-level ZooKeeper clients on a 3-server ensemble whose server they use is killed: each moves
to another server and keeps its session (the bulk reader reads, the multi writer writes with the
same session id, the change feed reports a change made after the move)."""

from __future__ import annotations

import threading
import time

import pytest

from replog.common.zk import bulk
from replog.common.zk import multi_writer as mw
from replog.common.zk.change_feed import ChangeFeed
from replog.common.zk.client import ZkClient
from tests.integration.controller_helpers import wait_for
from tests.integration.ensemble_helpers import ENSEMBLE_ONLY, server_of_session, serving

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory):
    """A 3-server ensemble with ZooKeeper authentication (the fixture kills every server at the end)."""
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("ensemble"))
    try:
        yield factory(ENSEMBLE_ONLY)
    finally:
        factory.teardown()


@pytest.fixture
def zk(ensemble):
    """Every server running (a test before may have killed one), and a super-user session."""
    names = ensemble.zookeeper_names
    for name in names:
        ensemble.start(name)
    ensemble.wait_healthy(names, 60)
    client = ZkClient(ensemble.zookeeper_endpoint)
    client.start(timeout_s=30)
    yield client
    client.stop()


def kill_server_of(ensemble, session_id: int) -> str:
    """kill -9 the server holding `session_id`'s connection; the other two keep a quorum."""
    name = wait_for(lambda: server_of_session(ensemble, session_id), 10, f"a server holding session {session_id:x}")
    ensemble.kill(name)
    wait_for(lambda: len(serving(ensemble)) == 2, 30, "the two other servers to serve clients")
    return name


def test_a_bulk_read_goes_on_at_another_server_in_the_same_session(ensemble, zk):
    paths = [f"/bulk-ensemble/{i}" for i in range(600)]  # two MultiReads
    for i, path in enumerate(paths):
        zk.kazoo.create(path, b"v%d" % i, makepath=True)
    with bulk.BulkReader(ensemble.zookeeper_endpoint) as reader:
        reader.sync()
        first = reader.get_many(paths)
        session_id = reader.session_id
        killed = kill_server_of(ensemble, session_id)
        again = reader.get_many(paths)
        assert reader.session_id == session_id
        assert server_of_session(ensemble, session_id) not in (None, killed)
    assert [item[0] for item in again] == [b"v%d" % i for i in range(600)] == [item[0] for item in first]


def test_the_multi_writer_keeps_its_session_when_its_server_dies(ensemble, zk):
    zk.kazoo.create("/multi-ensemble", b"0")
    writer = mw.MultiWriter(ensemble.zookeeper_endpoint, session_timeout_s=6.0)
    try:
        assert writer.commit([[mw.SetData("/multi-ensemble", b"1", 0)]]) == [[mw.OK]]
        session_id = writer.session_id
        killed = kill_server_of(ensemble, session_id)
        assert writer.commit([[mw.Check("/multi-ensemble", 1), mw.SetData("/multi-ensemble", b"2", 1)]]) == [
            [mw.OK, mw.OK]]
        assert writer.session_id == session_id
        assert server_of_session(ensemble, session_id) not in (None, killed)
    finally:
        writer.close()
    assert zk.kazoo.get("/multi-ensemble")[0] == b"2"


def test_the_change_feed_reports_a_change_made_after_its_server_died(ensemble, zk):
    zk.kazoo.ensure_path("/brokers/topics")
    seen: list[str | None] = []
    lock = threading.Lock()

    def on_change(path: str | None) -> None:
        with lock:
            seen.append(path)

    feed = ChangeFeed(ensemble.zookeeper_endpoint, ["/brokers/topics"], on_change, session_timeout_s=6.0)
    feed.open()
    try:
        session_id = feed.session_id
        zk.kazoo.create("/brokers/topics/before", b"{}")
        feed.barrier()
        killed = kill_server_of(ensemble, session_id)
        wait_for(lambda: None in seen, 15, "the feed to say it may have missed changes")
        zk.kazoo.create("/brokers/topics/after", b"{}")
        deadline = time.monotonic() + 15
        while "/brokers/topics/after" not in seen:
            feed.barrier()  # after it, every notification of a change made before it has come
            assert time.monotonic() < deadline, f"no notification of the change after the move: {seen}"
        assert seen.count(None) == 1 and seen[0] == "/brokers/topics/before"
        assert not feed.broken and feed.session_id == session_id
        assert server_of_session(ensemble, session_id) not in (None, killed)
    finally:
        feed.close()
