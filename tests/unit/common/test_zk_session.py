"""The session handshake against fake servers on loopback: a dead server is skipped, a resumed session
sends its id, password and last zxid, and an expired one is told apart from a dead server."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from replog.common.zk import session

CONNECT_REQUEST = struct.Struct(">iqiqi")


class FakeServer:
    """Accepts one connection, records its connect request and answers it with `timeout_ms`, `session_id`."""

    def __init__(self, timeout_ms: int = 6000, session_id: int = 0x1234, password: bytes = b"p" * 16) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = ("127.0.0.1", self.listener.getsockname()[1])
        self.answer = struct.pack(">iiqi", 0, timeout_ms, session_id, len(password)) + password + b"\0"
        self.request: tuple | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            frame = session.read_frame(conn, bytearray())
            fields = CONNECT_REQUEST.unpack_from(frame, 0)
            self.request = fields[:4] + (frame[CONNECT_REQUEST.size:CONNECT_REQUEST.size + fields[4]],)
            conn.sendall(struct.pack(">i", len(self.answer)) + self.answer)
            conn.recv(1)  # until the client closes

    def close(self) -> None:
        self.listener.close()


def dead_address() -> tuple[str, int]:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()


def test_a_dead_server_is_skipped_and_a_new_session_takes_what_the_live_one_gives():
    live = FakeServer()
    try:
        sock, key, server = session.connect([dead_address(), live.address], 5.0)
        sock.close()
        live.thread.join(5)
    finally:
        live.close()
    assert server == live.address
    assert key == session.SessionKey(0x1234, b"p" * 16, 6000)
    assert live.request == (0, 0, 5000, 0, b"\0" * 16)  # protocol, last zxid, timeout, no session, no password


def test_a_resumed_session_sends_its_id_password_and_last_zxid():
    live = FakeServer(timeout_ms=4000, session_id=0x99, password=b"s" * 16)
    try:
        key = session.SessionKey(0x99, b"s" * 16, 4000)
        sock, resumed, _ = session.connect([live.address], 5.0, key=key, last_zxid=0x500000007)
        sock.close()
        live.thread.join(5)
    finally:
        live.close()
    assert resumed == key
    assert live.request == (0, 0x500000007, 4000, 0x99, b"s" * 16)


def test_a_session_the_server_answers_with_timeout_zero_has_expired():
    live = FakeServer(timeout_ms=0, session_id=0)
    try:
        with pytest.raises(session.SessionExpired, match="0x99 has expired"):
            session.connect([live.address], 5.0, key=session.SessionKey(0x99, b"s" * 16, 4000))
    finally:
        live.close()


def test_no_server_answering_is_a_lost_connection_naming_each_one():
    dead = dead_address()
    with pytest.raises(session.ConnectionLost, match=f"no ZooKeeper server answered .*{dead[1]}"):
        session.connect([dead], 1.0)


def test_peer_closed_tells_a_closed_connection_from_a_quiet_one():
    ours, theirs = socket.socketpair()
    try:
        assert not session.peer_closed(ours)
        theirs.sendall(b"x")
        assert not session.peer_closed(ours)  # data waiting is not a close, and stays to be read
        assert ours.recv(1) == b"x"
        theirs.close()
        assert session.peer_closed(ours)
    finally:
        ours.close()


def test_a_connect_string_gives_every_server_and_the_chroot():
    assert session.parse_connect("a:1, b:2,c:3/replog/x") == ([("a", 1), ("b", 2), ("c", 3)], "/replog/x")
    assert session.parse_connect("127.0.0.1:2181") == ([("127.0.0.1", 2181)], "")
