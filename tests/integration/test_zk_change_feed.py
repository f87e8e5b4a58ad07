"""The change feed: persistent recursive watches over our own ZooKeeper session."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time

import pytest

from replog.common.zk.change_feed import ChangeFeed, ChangeFeedBroken

pytestmark = pytest.mark.integration


class Seen:
    def __init__(self) -> None:
        self.paths: list[str | None] = []
        self.lock = threading.Lock()

    def __call__(self, path: str | None) -> None:
        with self.lock:
            self.paths.append(path)


def test_every_change_below_a_watched_path_is_reported_by_the_barrier(zk_client):
    kazoo = zk_client.kazoo
    kazoo.ensure_path("/brokers/topics/old/partitions/0")
    seen = Seen()
    feed = ChangeFeed(zk_client.endpoint, ["/brokers/topics"], seen)
    feed.open()
    try:
        kazoo.create("/brokers/topics/new", b"{}")
        kazoo.create("/brokers/topics/new/partitions/0/state", b"a", makepath=True)
        kazoo.set("/brokers/topics/new/partitions/0/state", b"b")
        kazoo.set("/brokers/topics/new/partitions/0/state", b"c")  # a persistent watch sees both
        kazoo.delete("/brokers/topics/old", recursive=True)
        kazoo.create("/config/topics/elsewhere", b"{}", makepath=True)  # not watched
        feed.barrier()
        paths = list(seen.paths)
        assert "/brokers/topics/new" in paths
        assert paths.count("/brokers/topics/new/partitions/0/state") == 3  # created, changed twice
        assert "/brokers/topics/old" in paths and "/brokers/topics/old/partitions/0" in paths
        assert not any(p.startswith("/config") for p in paths if p)
        assert None not in paths and not feed.broken
    finally:
        feed.close()


def wait_until(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.05)


def test_a_dropped_connection_resumes_the_session_and_says_once_that_changes_may_have_been_missed(zk_client):
    kazoo = zk_client.kazoo
    seen = Seen()
    feed = ChangeFeed(zk_client.endpoint, ["/brokers/topics"], seen)
    feed.open()
    try:
        session_id = feed.session_id
        feed._sock.shutdown(socket.SHUT_RDWR)  # the connection drops, as when its server dies
        wait_until(lambda: None in seen.paths, 10, "the feed says it may have missed changes")
        kazoo.create("/brokers/topics/after-the-move", b"{}")
        feed.barrier()
        assert seen.paths == [None, "/brokers/topics/after-the-move"]
        assert feed.session_id == session_id and not feed.broken
    finally:
        feed.close()


def test_an_expired_session_is_reported_once_and_refuses_barriers(zk_client):
    seen = Seen()
    feed = ChangeFeed(zk_client.endpoint, ["/brokers/topics"], seen)
    feed.open()
    # A wrong password makes the server answer the resumption as it answers an expired session.
    feed._key = dataclasses.replace(feed._key, password=b"x" * 16)
    feed._sock.shutdown(socket.SHUT_RDWR)
    wait_until(lambda: feed.broken, 15, "the feed is broken")
    assert seen.paths == [None]
    with pytest.raises(ChangeFeedBroken):
        feed.barrier()
    feed.close()


def test_closing_feeds_never_breaks_the_next_sessions_tls_handshake(zk_client):
    """A feed's reader is inside a TLS read when the feed closes. Were the socket closed under it, the read's
    alert would reach whichever connection is given the descriptor next: ZooKeeper then refused that
    connection's handshake (illegal_parameter). Closing and at once opening other sessions, many times over,
    every session opens."""
    from replog.common.zk.bulk import BulkReader

    assert zk_client.endpoint.tls is not None, "the test server serves TLS only"
    for _ in range(40):
        feed = ChangeFeed(zk_client.endpoint, ["/brokers/topics"], Seen())
        feed.open()
        feed.close()
        with BulkReader(zk_client.endpoint) as reader:  # its connection may take the feed's descriptor
            assert reader.children_many(["/brokers"]) != [None]
