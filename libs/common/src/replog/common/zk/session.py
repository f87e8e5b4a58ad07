"""The ZooKeeper session handshake and framing shared by the wire-level clients (bulk reads, the
pipelined multi writer, the change feed), and how they move to another server of an ensemble.

A session is not a connection. The server that answers a connect request gives the
session an id and a password; the session lives on the ensemble (its leader tracks it)
for as long as some server hears from it within its timeout. When the connection breaks
-- its server died, or lost the quorum and dropped its clients -- a client connects to
another server with the same id and password and the last zxid it has seen. That server
refuses a client that has seen a newer zxid than it has (it closes the connection: try
the next one), so a client never reads older state than it already did; and it answers
a session that has expired meanwhile with a timeout of 0, which `connect` raises as
SessionExpired. Authentication belongs to the connection, not the session: it is sent
again on every connection. Ephemeral znodes and the session's ownership survive the move;
watches do not (the server keeps them per connection), so a client that had some sets
them again.

Wire format (jute, big-endian, each frame an int32 length then a body). Connect request:
protocolVersion i32, lastZxidSeen i64, timeOut i32, sessionId i64, passwd buffer,
readOnly bool; its answer: protocolVersion i32, timeOut i32, sessionId i64, passwd buffer
(then readOnly bool). Then, with credentials (auth.py), one auth request per identity:
xid -4, type 100, AuthPacket (type i32 0, scheme "digest", auth buffer "user:password"),
answered by a header with xid -4 whose err is 0, or AUTHFAILED (-115) before the server
closes the connection. Every later answer starts with a header: xid i32, zxid i64, err i32.

TLS (tls.py): with TLS files, each connection is wrapped after the TCP connect and before the
connect request, checking the server's certificate against the host of the connect string; a server
that refuses this process's certificate fails the handshake, which counts as a failed connection (the
next server is tried). The clients read on one thread while another writes (bulk's sender, the change
feed's pinger), so the context stops at TLS 1.2, where a read that succeeds writes nothing: a TLS 1.3
read may answer a key update or take a session ticket on the reader's thread.

Closing a connection another thread uses: OpenSSL keeps the socket's descriptor number, so a TLS read or
write still in progress when the socket is closed carries on with whatever connection is given that number
next -- a read that fails sends its fatal alert there, a read goes on to consume its bytes, a write its
records. Seen as ZooKeeper refusing a new session's handshake with illegal_parameter (an encrypted alert of
a closed connection amid its handshake). So a client with a second thread on a connection first calls
`stop_io` (every read and write in progress returns, and the descriptor stays this connection's), waits
for that thread to leave the connection, and only then closes it.
"""

from __future__ import annotations

import random
import socket
import ssl
import struct
import time
from dataclasses import dataclass
from typing import Sequence

from replog.common.security.files import TlsFiles
from replog.common.zk import tls as zk_tls
from replog.common.zk.auth import ZkCredentials

_I32 = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">iii")      # length, xid, type
_REPLY_HEADER = struct.Struct(">iqi")        # xid, zxid, err
_CONNECT = struct.Struct(">iqiqi")           # protocolVersion, lastZxid, timeout, sessionId, passwd len
_CONNECTED = struct.Struct(">iiqi")          # protocolVersion, timeout, sessionId, passwd len

OP_PING = 11
OP_CLOSE = -11
OP_AUTH = 100
XID_PING = -2
XID_AUTH = -4
ERR_AUTH_FAILED = -115
PASSWORD_BYTES = 16
RECONNECT_PAUSE_FIRST_S = 0.05
RECONNECT_PAUSE_MAX_S = 0.5

Server = tuple[str, int]


class ZkWireError(RuntimeError):
    """A wire-level ZooKeeper client failed (bulk.BulkReadError is this class)."""


class ConnectionLost(ZkWireError):
    """The connection closed or failed, or no server answered: another server may do."""


class SessionExpired(ZkWireError):
    """The ensemble has expired the session (its ephemeral znodes are gone)."""


class ZkAuthError(ZkWireError):
    """ZooKeeper refused this session's credentials, or an operation for want of permission."""


@dataclass(frozen=True)
class SessionKey:
    """What resumes a session on another server: the id and password its first server gave it."""

    session_id: int
    password: bytes
    timeout_ms: int


def parse_connect(connect: str) -> tuple[list[Server], str]:
    """(host, port) pairs and the chroot ("" for none) of a connect string."""
    hosts, _, chroot = connect.partition("/")
    servers = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        servers.append((host, int(port)))
    return servers, ("/" + chroot).rstrip("/") if chroot else ""


def read_frame(sock: socket.socket, buffer: bytearray) -> bytes:
    """The next length-prefixed frame; `buffer` keeps what was received beyond it."""
    while True:
        if len(buffer) >= 4:
            (length,) = _I32.unpack_from(buffer, 0)
            if len(buffer) >= 4 + length:
                frame = bytes(buffer[4:4 + length])
                del buffer[:4 + length]
                return frame
        try:
            chunk = sock.recv(1 << 20)
        except OSError as exc:
            raise ConnectionLost(f"reading from ZooKeeper failed: {exc}") from None
        if not chunk:
            raise ConnectionLost("ZooKeeper closed the connection")
        buffer += chunk


def reply_zxid(frame: bytes) -> int:
    """The zxid in an answer's header (0 or less for answers that carry none)."""
    return _REPLY_HEADER.unpack_from(frame, 0)[1]


def connect(servers: Sequence[Server], timeout_s: float, *, key: SessionKey | None = None, last_zxid: int = 0,
            credentials: ZkCredentials | None = None, receive_buffer: int = 0, avoid: Server | None = None,
            deadline: float | None = None, tls: TlsFiles | None = None) -> tuple[socket.socket, SessionKey, Server]:
    """A connection to one of `servers` (tried in a shuffled order, `avoid` last) holding a new session, or
    session `key` resumed; handshake and authentication done. Without `deadline`, one round over the
    servers; with it, rounds with short pauses until one answers or the deadline passes (ConnectionLost).
    With `tls`, every connection is a TLS one presenting that certificate. A resumed session the ensemble has expired raises SessionExpired; refused credentials, ZkAuthError."""
    order = list(servers)
    random.shuffle(order)
    if avoid in order and len(order) > 1:
        order.remove(avoid)
        order.append(avoid)
    pause_s = RECONNECT_PAUSE_FIRST_S
    while True:
        errors = []
        for server in order:
            try:
                sock, answered = _handshake(server, timeout_s, key, last_zxid, receive_buffer, deadline, tls)
            except (OSError, ConnectionLost) as exc:
                errors.append(f"{server[0]}:{server[1]}: {exc}")
                continue
            if credentials is not None:
                try:
                    authenticate(sock, credentials)
                except ConnectionLost as exc:
                    sock.close()
                    errors.append(f"{server[0]}:{server[1]}: {exc}")
                    continue
                except BaseException:
                    sock.close()
                    raise
            sock.settimeout(timeout_s)
            return sock, answered, server
        if deadline is None or time.monotonic() + pause_s >= deadline:
            raise ConnectionLost(f"no ZooKeeper server answered ({'; '.join(errors)})")
        time.sleep(pause_s)
        pause_s = min(RECONNECT_PAUSE_MAX_S, pause_s * 2)


def _handshake(server: Server, timeout_s: float, key: SessionKey | None, last_zxid: int, receive_buffer: int,
               deadline: float | None, tls: TlsFiles | None) -> tuple[socket.socket, SessionKey]:
    attempt_s = timeout_s if deadline is None else max(0.1, min(timeout_s, deadline - time.monotonic()))
    sock = socket.create_connection(server, timeout=attempt_s)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        if tls is not None:
            sock = zk_tls.wrap(sock, tls, server[0])  # the handshake, within the attempt's timeout
        timeout_ms = key.timeout_ms if key is not None else int(timeout_s * 1000)
        password = key.password if key is not None else b"\0" * PASSWORD_BYTES
        body = _CONNECT.pack(0, last_zxid, timeout_ms, key.session_id if key else 0, len(password)) + password + b"\0"
        sock.sendall(_I32.pack(len(body)) + body)
        frame = read_frame(sock, bytearray())
        if len(frame) < _CONNECTED.size:
            raise ConnectionLost("ZooKeeper refused the session")
        _, negotiated_ms, session_id, length = _CONNECTED.unpack_from(frame, 0)
        if negotiated_ms <= 0 or session_id == 0:
            if key is not None:
                raise SessionExpired(f"ZooKeeper session 0x{key.session_id:x} has expired")
            raise ConnectionLost("ZooKeeper refused the session")
        answered = frame[_CONNECTED.size:_CONNECTED.size + max(length, 0)]
        return sock, SessionKey(session_id, answered, negotiated_ms)
    except BaseException:
        sock.close()
        raise


def authenticate(sock: socket.socket, credentials: ZkCredentials) -> None:
    """Send one digest auth packet per identity and wait for each answer (nothing else is in flight)."""
    scheme = b"digest"
    for packet in credentials.auth_packets():
        user = packet.split(b":", 1)[0].decode()
        body = _I32.pack(0) + _I32.pack(len(scheme)) + scheme + _I32.pack(len(packet)) + packet
        sock.sendall(_REQUEST_HEADER.pack(8 + len(body), XID_AUTH, OP_AUTH) + body)
        try:
            frame = read_frame(sock, bytearray())
        except ConnectionLost:
            raise ZkAuthError(f"ZooKeeper closed the session while authenticating as '{user}'") from None
        xid, _, err = _REPLY_HEADER.unpack_from(frame, 0)
        if xid != XID_AUTH:
            raise ZkAuthError(f"ZooKeeper answered xid {xid} to the authentication of '{user}'")
        if err == ERR_AUTH_FAILED:
            raise ZkAuthError(f"ZooKeeper refused the credentials of '{user}' (AUTHFAILED); check "
                              "zookeeper_credentials_file and the server's authentication providers")
        if err != 0:
            raise ZkAuthError(f"ZooKeeper error {err} authenticating as '{user}'")


def stop_io(sock: socket.socket) -> None:
    """Make every read and write in progress on `sock`, on any thread, return at once, and every later one
    fail, without closing it: its descriptor cannot be given to another connection yet."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # not connected any more: nothing in progress waits on it


def close_session(sock: socket.socket) -> None:
    """End the session at once (rather than when it times out on the server) and close the socket."""
    try:
        sock.sendall(_REQUEST_HEADER.pack(8, 0x7FFFFFF0, OP_CLOSE))
    except OSError:
        pass
    sock.close()


def peer_closed(sock: socket.socket, buffer: bytearray) -> bool:
    """True when the server has closed this connection (or it failed) while nothing was asked of it: a
    request sent now would not be answered. What is there to read stays to be read: on a plain socket
    it is only peeked at; a TLS socket cannot peek at decrypted bytes, so they are moved to `buffer`
    (the connection's, which read_frame takes first)."""
    blocking = sock.gettimeout()
    try:
        sock.setblocking(False)
        try:
            if isinstance(sock, ssl.SSLSocket):
                data = sock.recv(1 << 16)
                buffer += data
                return data == b""
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False  # nothing there (on TLS: no whole record yet)
        except OSError:
            return True
    finally:
        sock.settimeout(blocking)
