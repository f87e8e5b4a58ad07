"""Pipelined ZooKeeper `multi` transactions on a session of their own, for the controller's bulk writes.

Why: after a broker failure at 10K partitions the controller writes 10K partition states in
batches of up to 1,000 operations, and the brokers wait for the first of them. Written as
jute frames on one socket, back to back, they cost little more than the server's own work;
kazoo builds, serializes and answers each operation as Python objects on two threads.
The figures: docs/perf/zookeeper-multi-writes.md.

What it speaks: Multi (opcode 14) holding Check (13), SetData (5), Create (1,
persistent, with the ACL the schema gives its path: the caller fills `Create.acl` from
`ZkEndpoint.acl`) and Delete (2), on a session authenticated as in ``bulk``. The wire format is jute, as in ``bulk``,
big-endian, each frame an int32 length and a body:

- request: xid i32, type i32, then per operation a MultiHeader (type i32,
  done bool, err i32 = -1) and its record (path as i32 length + UTF-8; Check:
  version i32; SetData: data buffer, version i32; Create: data buffer, ACL
  vector, flags i32; Delete: version i32), then a MultiHeader of type -1 with
  done set;
- reply: xid i32, zxid i64, err i32, then per operation a MultiHeader and its
  result (SetData: a Stat of 68 bytes; Create: the path; Check, Delete:
  nothing; type -1: an error code i32), until a header with done set.

A transaction is all or nothing. When one fails, every result is an error
code: 0 for an operation that would have succeeded ("rolled back"), the cause
for the one that failed, -2 (runtime inconsistency) for those after it.

Sessions: one session, opened on first use and kept. A multi sent into a
connection that is already dead would leave its fate unknown, so before a
commit the connection is checked: one the server has closed (it died, or lost
the quorum) is replaced at once, and one idle for more than a third of the
session timeout is pinged first (the answer proves the session alive and
restarts its timer). A replaced connection resumes the same session on another
server of the ensemble, with the last zxid seen (session.py); only when the
ensemble has expired the session does a new one begin. A connection that
breaks while transactions are in flight raises MultiWriteError: the caller
cannot know which were applied and must re-read (the controller reloads its
state); nothing is sent again here. The next commit resumes the session.

Ordering: transactions are sent back to back, at most WINDOW (2) in flight, and
ZooKeeper applies one session's requests in order. The results come back in
the same order. Reads on another session (kazoo) see these writes once
`commit` has returned if both sessions are on the same server; on an ensemble
a lagging follower may serve an older read, so callers keep the writes
conditional (versions), as the controller does.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass
from typing import Sequence

from replog.common.zk import session
from replog.common.zk.auth import OPEN_ACL, AclEntry, ZkEndpoint
from replog.common.zk.bulk import _MULTI_HEADER, OP_ERROR
from replog.common.zk.session import _I32, _REPLY_HEADER, _REQUEST_HEADER, SessionExpired, SessionKey, ZkWireError

_STAT_SIZE = 68

OP_CREATE = 1
OP_DELETE = 2
OP_SET_DATA = 5
OP_CHECK = 13
OP_MULTI = 14

OK = 0
ERR_RUNTIME_INCONSISTENCY = -2
ERR_NO_NODE = -101
ERR_NO_AUTH = -102
ERR_BAD_VERSION = -103
ERR_NODE_EXISTS = -110
ERR_NOT_EMPTY = -111
ERROR_NAMES = {
    ERR_RUNTIME_INCONSISTENCY: "RuntimeInconsistency", ERR_NO_NODE: "NoNodeError", ERR_NO_AUTH: "NoAuthError",
    ERR_BAD_VERSION: "BadVersionError", ERR_NODE_EXISTS: "NodeExistsError", ERR_NOT_EMPTY: "NotEmptyError",
}

# Transactions in flight at most: replies are read while later ones are still to send. The server
# answers every session's requests, heartbeats included, through one pipeline, so whatever this writer
# has queued there delays every other client's heartbeat: with 8 multis of 1,000 creates queued, a
# loaded server left other sessions' heartbeats unanswered for seconds; 2 keep the server as busy
# (docs/perf/controller-million.md).
WINDOW = 2


class MultiWriteError(RuntimeError):
    """The session failed with transactions in flight: which of them were applied is unknown."""


@dataclass(frozen=True)
class Check:
    path: str
    version: int


@dataclass(frozen=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class Create:
    path: str
    data: bytes = b""
    acl: tuple[AclEntry, ...] = OPEN_ACL


@dataclass(frozen=True)
class Delete:
    path: str
    version: int = -1


Operation = Check | SetData | Create | Delete
_OPCODES = {Check: OP_CHECK, SetData: OP_SET_DATA, Create: OP_CREATE, Delete: OP_DELETE}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ZooKeeper error {code}")


def _encode_acl(acl: tuple[AclEntry, ...]) -> bytes:
    parts = [_I32.pack(len(acl))]
    for perms, scheme, ident in acl:
        parts += [_I32.pack(perms), _I32.pack(len(scheme)), scheme.encode(), _I32.pack(len(ident)), ident.encode()]
    return b"".join(parts)


def encode_multi(xid: int, operations: Sequence[Operation], chroot: str = "") -> bytes:
    """One Multi request frame."""
    parts: list[bytes] = []
    for op in operations:
        kind = type(op)
        if kind not in _OPCODES:
            raise TypeError(f"not a multi operation: {op!r}")
        path = (chroot + op.path).encode()
        head = _MULTI_HEADER.pack(_OPCODES[kind], False, -1) + _I32.pack(len(path)) + path
        if kind is SetData:
            parts.append(head + _I32.pack(len(op.data)) + op.data + _I32.pack(op.version))
        elif kind is Create:
            parts.append(head + _I32.pack(len(op.data)) + op.data + _encode_acl(op.acl) + _I32.pack(0))
        else:  # Check, Delete
            parts.append(head + _I32.pack(op.version))
    parts.append(_MULTI_HEADER.pack(OP_ERROR, True, -1))
    body = b"".join(parts)
    return _REQUEST_HEADER.pack(8 + len(body), xid, OP_MULTI) + body


def decode_multi(frame: bytes) -> tuple[int, list[int]]:
    """(xid, one result per operation): OK, or an error code (see the module docstring)."""
    xid, _zxid, err = _REPLY_HEADER.unpack_from(frame, 0)
    pos = _REPLY_HEADER.size
    if err != OK and len(frame) <= pos:
        raise MultiWriteError(f"ZooKeeper refused the transaction: {error_name(err)}")
    results: list[int] = []
    while True:
        kind, done, _ = _MULTI_HEADER.unpack_from(frame, pos)
        pos += _MULTI_HEADER.size
        if done:
            return xid, results
        if kind == OP_SET_DATA:
            pos += _STAT_SIZE
            results.append(OK)
        elif kind == OP_CREATE:
            (length,) = _I32.unpack_from(frame, pos)
            pos += 4 + max(length, 0)
            results.append(OK)
        elif kind in (OP_CHECK, OP_DELETE):
            results.append(OK)
        elif kind == OP_ERROR:
            (code,) = _I32.unpack_from(frame, pos)
            pos += 4
            results.append(code)
        else:
            raise MultiWriteError(f"unexpected result type {kind} in a multi reply")


class MultiWriter:
    """`commit(transactions)`: each transaction (a list of operations) applied all or nothing, in order."""

    def __init__(self, endpoint: ZkEndpoint | str, *, session_timeout_s: float) -> None:
        self._endpoint = ZkEndpoint.of(endpoint)
        self._hosts, self._chroot = session.parse_connect(self._endpoint.connect)
        self._session_timeout_s = session_timeout_s
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._last_used = 0.0
        self._xid = 0
        self._key: SessionKey | None = None
        self._server: session.Server | None = None
        self._last_zxid = 0

    @property
    def session_id(self) -> int:
        """The session's id (0 before the first commit): the same across a move to another server."""
        return self._key.session_id if self._key is not None else 0

    def close(self) -> None:
        """End the session."""
        if self._sock is not None:
            session.close_session(self._sock)
        self._sock = None
        self._key = None
        self._buffer.clear()

    def _drop_connection(self) -> None:
        """Close the connection but not the session, which the next commit resumes on another server."""
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._buffer.clear()

    def _session(self) -> socket.socket:
        if self._sock is not None and session.peer_closed(self._sock, self._buffer):
            self._drop_connection()
        if self._sock is not None and time.monotonic() - self._last_used > self._session_timeout_s / 3:
            if not self._ping():
                self._drop_connection()
        if self._sock is None:
            self._connect()
        return self._sock

    def _connect(self) -> None:
        """A connection with the session resumed (trying every server for up to the session timeout), or the
        first session (one round over the servers), or a new one if the ensemble expired the old."""
        failed, self._server = self._server, None
        deadline = None if self._key is None else time.monotonic() + self._key.timeout_ms / 1000
        connect = lambda key: session.connect(  # noqa: E731
            self._hosts, self._session_timeout_s, key=key, last_zxid=self._last_zxid, receive_buffer=4 << 20,
            credentials=self._endpoint.credentials, avoid=failed, deadline=deadline, tls=self._endpoint.tls)
        try:
            try:
                self._sock, self._key, self._server = connect(self._key)
            except SessionExpired:
                self._key = None
                self._sock, self._key, self._server = connect(None)
        except (OSError, ZkWireError) as exc:
            raise MultiWriteError(f"cannot open a ZooKeeper session for writing: {exc}") from None
        self._last_used = time.monotonic()

    def _ping(self) -> bool:
        """True when the server answers a ping on this connection (nothing else is in flight)."""
        try:
            self._sock.sendall(_REQUEST_HEADER.pack(8, session.XID_PING, session.OP_PING))
            while True:
                frame = self._read_frame(self._sock)
                if _I32.unpack_from(frame, 0)[0] == session.XID_PING:
                    self._last_used = time.monotonic()
                    return True
        except (OSError, ZkWireError, struct.error):
            return False

    def _read_frame(self, sock: socket.socket) -> bytes:
        frame = session.read_frame(sock, self._buffer)
        self._last_zxid = max(self._last_zxid, session.reply_zxid(frame))
        return frame

    def commit(self, transactions: Sequence[Sequence[Operation]]) -> list[list[int]]:
        """Per transaction, per operation: OK or an error code. Raises MultiWriteError if the session
        fails before every reply is in (nothing is retried: a transaction may have been applied)."""
        sock = self._session()
        results: list[list[int] | None] = [None] * len(transactions)
        first_xid = self._xid + 1
        sent = received = 0
        try:
            while received < len(transactions):
                while sent < len(transactions) and sent - received < WINDOW:
                    self._xid += 1
                    sock.sendall(encode_multi(self._xid, transactions[sent], self._chroot))
                    sent += 1
                xid, outcome = self._reply(sock)
                index = xid - first_xid
                if not 0 <= index < len(transactions) or results[index] is not None:
                    raise MultiWriteError(f"a reply for xid {xid}, which this commit did not send")
                if len(outcome) != len(transactions[index]):
                    raise MultiWriteError(f"{len(outcome)} results for a transaction of "
                                          f"{len(transactions[index])} operations")
                results[index] = outcome
                received += 1
        except (OSError, ZkWireError, struct.error) as exc:
            self._drop_connection()
            raise MultiWriteError(f"the ZooKeeper write session failed with {sent - received} transaction(s) "
                                  f"unanswered: {exc}") from None
        except MultiWriteError:
            self.close()
            raise
        self._last_used = time.monotonic()
        return results  # type: ignore[return-value]

    def _reply(self, sock: socket.socket) -> tuple[int, list[int]]:
        while True:
            frame = self._read_frame(sock)
            (xid,) = _I32.unpack_from(frame, 0)
            if xid < 0:
                continue  # a notification or ping answer would have a negative xid; none is asked for
            return decode_multi(frame)
