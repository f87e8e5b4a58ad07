"""The pipelined multi writer against a real ZooKeeper server: all-or-nothing transactions,
the server's own error codes, order, and a session left idle."""

from __future__ import annotations

import pytest

from replog.common.zk import multi_writer as mw
from replog.common.zk import session

from .controller_helpers import wait_for

pytestmark = pytest.mark.integration


def test_transactions_apply_in_order_and_a_failed_one_changes_nothing(zk_client):
    kazoo = zk_client.kazoo
    kazoo.create("/fence", b"")
    writer = mw.MultiWriter(zk_client.endpoint, session_timeout_s=6)
    try:
        creates = [[mw.Check("/fence", 0), mw.Create("/w")]] + [
            [mw.Check("/fence", 0)] + [mw.Create(f"/w/n{i}", b"%d" % i) for i in range(start, start + 400)]
            for start in range(0, 4000, 400)]  # more transactions than the writer keeps in flight
        assert all(all(code == mw.OK for code in result) for result in writer.commit(creates))
        assert len(kazoo.get_children("/w")) == 4000

        results = writer.commit([
            [mw.Check("/fence", 0), mw.SetData("/w/n1", b"one", 0), mw.SetData("/w/n2", b"two", 7),
             mw.Delete("/w/n3")],
            [mw.Check("/fence", 0), mw.SetData("/w/n1", b"uno", 0), mw.Delete("/w/n3")],
        ])
        assert results[0] == [mw.OK, mw.OK, mw.ERR_BAD_VERSION, mw.ERR_RUNTIME_INCONSISTENCY]
        assert results[1] == [mw.OK, mw.OK, mw.OK]
        assert kazoo.get("/w/n1")[0] == b"uno" and kazoo.exists("/w/n3") is None
        assert kazoo.get("/w/n2") == (b"2", kazoo.get("/w/n2")[1]) and kazoo.get("/w/n2")[1].version == 0

        kazoo.set("/fence", b"taken")  # another writer moved the fence on
        assert writer.commit([[mw.Check("/fence", 0), mw.SetData("/w/n4", b"late")]]) == [
            [mw.ERR_BAD_VERSION, mw.ERR_RUNTIME_INCONSISTENCY]]
        assert kazoo.get("/w/n4")[0] == b"4"
        assert writer.commit([[mw.Check("/fence", 1), mw.Create("/w/n5")]]) == [[mw.OK, mw.ERR_NODE_EXISTS]]
    finally:
        writer.close()


def test_a_session_left_idle_is_replaced_before_the_next_write(zk_client):
    kazoo = zk_client.kazoo
    writer = mw.MultiWriter(zk_client.endpoint, session_timeout_s=1.2)  # the test server's minimum: 1 s
    try:
        assert writer.commit([[mw.Create("/idle")]]) == [[mw.OK]]
        first = writer._sock
        # What arrives meanwhile goes to the writer's own buffer, as when it looks itself (over TLS it must read).
        wait_for(lambda: session.peer_closed(first, writer._buffer), 10,
                 "the server to expire the idle session and close it")
        assert writer.commit([[mw.SetData("/idle", b"later")]]) == [[mw.OK]]
        assert kazoo.get("/idle")[0] == b"later"
    finally:
        writer.close()


def test_a_server_that_cannot_be_reached_is_a_clear_error():
    writer = mw.MultiWriter("127.0.0.1:1", session_timeout_s=2)
    with pytest.raises(mw.MultiWriteError, match="cannot open a ZooKeeper session"):
        writer.commit([[mw.Create("/x")]])
