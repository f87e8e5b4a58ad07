"""The session handshake against fake servers on loopback: a dead server is skipped, a resumed session
sends its id, password and last zxid, and an expired one is told apart from a dead server."""

from __future__ import annotations

import socket
import struct
import threading
import time

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
    buffer = bytearray()
    try:
        assert not session.peer_closed(ours, buffer)
        theirs.sendall(b"x")
        assert not session.peer_closed(ours, buffer)  # data waiting is not a close, and stays to be read
        assert ours.recv(1) == b"x"
        theirs.close()
        assert session.peer_closed(ours, buffer)
    finally:
        ours.close()


def test_a_connect_string_gives_every_server_and_the_chroot():
    assert session.parse_connect("a:1, b:2,c:3/replog/x") == ([("a", 1), ("b", 2), ("c", 3)], "/replog/x")
    assert session.parse_connect("127.0.0.1:2181") == ([("127.0.0.1", 2181)], "")


# --- TLS --------------------------------------------------------------------------------------------


@pytest.fixture
def tls_pair(tmp_path):
    """A server certificate of a CA (for 127.0.0.1), a client certificate of it, and one of another CA."""
    from replog.common.security.certificates import issue, new_authority
    from replog.common.security.principal import Principal

    authority = new_authority(tmp_path)
    server = issue(authority, Principal("user", "zookeeper"), tmp_path, stem="zookeeper", with_identity=False)
    client = issue(authority, Principal("broker", "1"), tmp_path)
    stranger = issue(new_authority(tmp_path / "other"), Principal("broker", "1"), tmp_path / "other")
    return server, client, stranger


class FakeTlsServer(FakeServer):
    """FakeServer behind TLS that needs a client certificate of the CA; records the client's certificate."""

    def __init__(self, files, **kwargs) -> None:
        import ssl

        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(files.cert_file, files.key_file)
        self.context.load_verify_locations(files.ca_file)
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.peer_certificate = None
        self.refused: Exception | None = None
        super().__init__(**kwargs)

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        try:
            conn = self.context.wrap_socket(conn, server_side=True)
        except OSError as exc:
            self.refused = exc
            conn.close()
            return
        self.peer_certificate = conn.getpeercert()
        with conn:
            session.read_frame(conn, bytearray())
            conn.sendall(struct.pack(">i", len(self.answer)) + self.answer)
            conn.recv(1)


def test_a_tls_session_shows_the_client_certificate_and_checks_the_server(tls_pair):
    server_files, client_files, _ = tls_pair
    live = FakeTlsServer(server_files)
    try:
        sock, key, _ = session.connect([live.address], 5.0, tls=client_files)
        with sock:
            assert key.session_id == 0x1234
            assert sock.version() == "TLSv1.2"
        live.thread.join(5)
        assert ("URI", "replog://broker/1") in live.peer_certificate["subjectAltName"]
    finally:
        live.close()


def test_a_server_the_ca_did_not_sign_is_a_failed_connection(tls_pair):
    server_files, _, stranger = tls_pair
    live = FakeTlsServer(server_files)
    try:
        with pytest.raises(session.ConnectionLost, match="CERTIFICATE_VERIFY_FAILED"):
            session.connect([live.address], 5.0, tls=stranger)  # trusts another CA than the server's
    finally:
        live.close()


def test_peer_closed_on_a_tls_connection_keeps_what_waits_for_the_reader(tls_pair):
    import ssl

    from replog.common.zk import tls as zk_tls

    server_files, client_files, _ = tls_pair
    listener = socket.create_server(("127.0.0.1", 0))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(server_files.cert_file, server_files.key_file)
    accepted = []
    acceptor = threading.Thread(target=lambda: accepted.append(server_context.wrap_socket(
        listener.accept()[0], server_side=True)), daemon=True)
    acceptor.start()
    ours = zk_tls.wrap(socket.create_connection(listener.getsockname(), timeout=5), client_files, "127.0.0.1")
    acceptor.join(5)
    theirs = accepted[0]
    buffer = bytearray()
    try:
        assert not session.peer_closed(ours, buffer)
        theirs.sendall(struct.pack(">i", 3) + b"abc")
        deadline = time.monotonic() + 5
        while not buffer and time.monotonic() < deadline:  # the bytes reach our socket
            assert not session.peer_closed(ours, buffer)
        assert session.read_frame(ours, buffer) == b"abc"
        theirs.close()
        deadline = time.monotonic() + 5
        while not session.peer_closed(ours, buffer):
            assert time.monotonic() < deadline, "the close was not seen"
    finally:
        ours.close()
        listener.close()
