"""The multi writer's session across a server's death, against fake servers on loopback: a transaction
in flight when the connection breaks is reported, never sent again; the next commit resumes the same
session on another server."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from replog.common.zk import multi_writer as mw
from replog.common.zk import session

SESSION_ID = 0x51
PASSWORD = b"k" * 16


class FakeServer:
    """Answers a connect request (with SESSION_ID, or resuming the one asked for), then Check-only multis
    with OK, recording each request's xid; with `die_on_request`, closes the connection on that request
    instead of answering it, as a server killed while it held the request would."""

    def __init__(self, die_on_request: int = 0) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = ("127.0.0.1", self.listener.getsockname()[1])
        self.die_on_request = die_on_request
        self.sessions_asked: list[int] = []
        self.requests: list[int] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                self._serve_one(conn)

    def _serve_one(self, conn: socket.socket) -> None:
        buffer = bytearray()
        request = session.read_frame(conn, buffer)
        self.sessions_asked.append(struct.unpack_from(">iqiq", request, 0)[3])
        answer = struct.pack(">iiqi", 0, 6000, SESSION_ID, len(PASSWORD)) + PASSWORD + b"\0"
        conn.sendall(struct.pack(">i", len(answer)) + answer)
        while True:
            try:
                frame = session.read_frame(conn, buffer)
            except session.ConnectionLost:
                return
            xid, kind = struct.unpack_from(">ii", frame, 0)
            if kind == session.OP_PING:
                reply = struct.pack(">iqi", xid, 7, 0)
            else:
                self.requests.append(xid)
                if len(self.requests) == self.die_on_request:
                    return  # closes the connection without an answer
                reply = struct.pack(">iqi", xid, 7, 0) + struct.pack(">i?i", mw.OP_CHECK, False, 0)
                reply += struct.pack(">i?i", -1, True, -1)
            conn.sendall(struct.pack(">i", len(reply)) + reply)

    def close(self) -> None:
        self.listener.close()


def test_a_transaction_in_flight_when_the_server_dies_is_reported_and_the_next_commit_resumes_elsewhere():
    first = FakeServer(die_on_request=2)
    writer = mw.MultiWriter(f"{first.address[0]}:{first.address[1]}", session_timeout_s=6.0)
    try:
        assert writer.commit([[mw.Check("/a", 0)]]) == [[mw.OK]]
        assert writer.session_id == SESSION_ID
        with pytest.raises(mw.MultiWriteError, match="1 transaction\\(s\\) unanswered"):
            writer.commit([[mw.Check("/a", 1)]])
        assert first.requests == [1, 2]  # the second was received, its outcome unknown to the writer
        first.close()
        second = FakeServer()
        writer._hosts = [first.address, second.address]  # the ensemble's other server
        assert writer.commit([[mw.Check("/a", 2)]]) == [[mw.OK]]
        assert second.sessions_asked == [SESSION_ID]  # the same session, resumed
        assert second.requests == [3]  # the transaction in doubt was not sent again
        assert writer.session_id == SESSION_ID
        second.close()
    finally:
        writer.close()
