"""The change feed: persistent recursive watches over our own ZooKeeper session."""

from __future__ import annotations

import threading

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


def test_a_lost_session_is_reported_once_and_refuses_barriers(zk_client):
    seen = Seen()
    feed = ChangeFeed(zk_client.endpoint, ["/brokers/topics"], seen)
    feed.open()
    feed._sock.shutdown(2)  # the connection drops, as when ZooKeeper expires the session
    for _ in range(100):
        if feed.broken:
            break
        threading.Event().wait(0.05)
    assert feed.broken and seen.paths == [None]
    with pytest.raises(ChangeFeedBroken):
        feed.barrier()
    feed.close()
