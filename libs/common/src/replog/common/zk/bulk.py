"""Bulk reads from ZooKeeper in batched `multiRead`s, for loading a whole cluster's state.

Why: kazoo sends one request per call, with Python overhead on both sides of each, and the
server's own cost is per request, not per znode. So this reader opens its own short
read-only session, packs the reads into MultiRead requests (ZooKeeper 3.6+), writes them
back to back without waiting (ZooKeeper answers a session's requests in order), and
decodes the replies with precompiled structs. The figures, and the designs it replaced:
docs/perf/zookeeper-bulk-reads.md.

Reads are as consistent as any ZooKeeper read on one session: each result reflects a state
at least as new as the one before it (a `sync` first makes the first read see every write
committed before the call).

On an ensemble the servers are tried in a shuffled order and a dead one is skipped. A call
whose connection breaks (its server died or lost the quorum) is made again, whole, on another
server, the session resumed there with the last zxid seen (session.py), so no read goes back in
time; reads are idempotent. It keeps trying until the reader's `timeout_s` from the call's start.

Only GetData and GetChildren (in MultiRead), GetACL (one request each: path; reply
a vector of ACL, each perms i32, scheme and id strings, then a Stat) and Sync are
spoken; watches are not set. Writes never go through here (the controller's bulk writes:
multi_writer.py).

Wire format (jute, big-endian): every frame is an int32 length then a body; the
handshake and authentication are session.py's. Request: xid i32, type i32, then for Sync a path
(i32 length + UTF-8); for MultiRead (type 22), per read a MultiHeader (type
i32: 4 GetData, 8 GetChildren; done bool false; err i32 -1) and its record
(path, watch bool false), then a MultiHeader of type -1 with done set. Reply:
xid i32, zxid i64, err i32; for MultiRead then per read a MultiHeader and its
result, until a header with done set: GetData a buffer and a Stat (i64
czxid, mzxid, ctime, mtime; i32 version, cversion, aversion; i64
ephemeralOwner; i32 dataLength, numChildren; i64 pzxid), GetChildren a vector
of strings, and a failed read (header type -1) an i32 error code. Unlike a
write multi, each read fails or succeeds alone: a missing znode is an error
result (NONODE) among the others. A reply carries all its results in one
frame: 500 partition states are about 50 KB, and the largest znodes replog
writes (a topic's assignment, about 20 bytes a partition) keep a reply within
the size of the metadata it reads.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TypeVar

from replog.common.zk import session
from replog.common.zk.auth import ZkCredentials, ZkEndpoint
from replog.common.zk.session import (
    _I32,
    _REPLY_HEADER,
    _REQUEST_HEADER,
    ConnectionLost,
    SessionExpired,
    SessionKey,
    ZkAuthError,
    ZkWireError,
    parse_connect,
    read_frame,
)

_STAT = struct.Struct(">qqqqiiiqiiq")
_MULTI_HEADER = struct.Struct(">i?i")       # type, done, err (multi and MultiRead operations)

OP_GET_DATA = 4
OP_GET_ACL = 6
OP_GET_CHILDREN = 8
OP_SYNC = 9
OP_MULTI_READ = 22
OP_ERROR = -1
ERR_NO_NODE = -101
ERR_NO_AUTH = -102
MULTI_READ_OPS = 500       # reads per MultiRead (docs/perf/zookeeper-bulk-reads.md)
WINDOW_REQUESTS = 40       # MultiReads in flight at most, so replies never fill both buffers


@dataclass(frozen=True)
class ZnodeStat:
    czxid: int
    mzxid: int
    version: int
    ephemeral_owner: int
    num_children: int


BulkReadError = ZkWireError  # the name callers know; ConnectionLost, SessionExpired and ZkAuthError are kinds of it
T = TypeVar("T")


def no_auth_message(what: str, credentials: ZkCredentials | None) -> str:
    """Why ZooKeeper answered NOAUTH, in terms a person can act on."""
    if credentials is None:
        return (f"ZooKeeper refused {what}: not authorized (NoAuth); this session is anonymous, and the znode's ACL "
                "admits authenticated replog identities only (set zookeeper_credentials_file)")
    return (f"ZooKeeper refused {what}: not authorized (NoAuth) for '{credentials.user}'; check its password in "
            "zookeeper_credentials_file, and the znode's ACL (docs/zookeeper.md)")


class BulkReader:
    """A short-lived session for bulk reads: `with BulkReader(endpoint) as r: r.get_many(paths)`."""

    def __init__(self, endpoint: ZkEndpoint | str, timeout_s: float = 30.0) -> None:
        self._endpoint = ZkEndpoint.of(endpoint)
        self._hosts, self._chroot = parse_connect(self._endpoint.connect)
        self._timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._key: SessionKey | None = None
        self._server: session.Server | None = None
        self._last_zxid = 0

    def __enter__(self) -> "BulkReader":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def session_id(self) -> int:
        return self._key.session_id if self._key is not None else 0

    def open(self) -> None:
        self._connect(None)

    def close(self) -> None:
        if self._sock is None:
            return
        session.close_session(self._sock)
        self._sock = None

    def _connect(self, deadline: float | None) -> None:
        """Connect (one round over the servers without `deadline`), resuming the session if there is one."""
        failed, self._server = self._server, None
        if self._sock is not None:
            self._sock.close()  # broken: closing the socket, not the session, which lives on elsewhere
            self._sock = None
        self._buffer.clear()
        connect = lambda key: session.connect(  # noqa: E731
            self._hosts, self._timeout_s, key=key, last_zxid=self._last_zxid, receive_buffer=4 << 20,
            credentials=self._endpoint.credentials, avoid=failed, deadline=deadline, tls=self._endpoint.tls)
        try:
            self._sock, self._key, self._server = connect(self._key)
        except SessionExpired:
            self._sock, self._key, self._server = connect(None)  # a new session: reads need no continuity of it

    def _retried(self, call: Callable[[], T]) -> T:
        """`call`, made again on another server while its connection breaks, until `timeout_s` from now."""
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                return call()
            except (ConnectionLost, OSError) as exc:
                if time.monotonic() >= deadline:
                    raise ConnectionLost(f"ZooKeeper reads failed for {self._timeout_s:g} s: {exc}") from None
                self._connect(deadline)

    def _read_frame(self) -> bytes:
        frame = read_frame(self._sock, self._buffer)
        self._last_zxid = max(self._last_zxid, session.reply_zxid(frame))
        return frame

    def sync(self, path: str = "/") -> None:
        """Make the next reads see every write committed before now."""
        self._retried(lambda: self._sync(path))

    def _sync(self, path: str) -> None:
        encoded = (self._chroot + path).encode()
        self._sock.sendall(_REQUEST_HEADER.pack(12 + len(encoded), 1, OP_SYNC) + _I32.pack(len(encoded)) + encoded)
        _, _, err = _REPLY_HEADER.unpack_from(self._read_frame(), 0)
        if err != 0:
            raise BulkReadError(f"ZooKeeper error {err} on sync {path}")

    def get_acls(self, paths: Sequence[str]) -> list[list[tuple[str, str, int]] | None]:
        """The ACL of every path as (scheme, id, perms) entries, in order (None for a missing znode, and no
        entries for an ACL this session may not read: it names no one this session can trust). ZooKeeper
        shows digest hashes only to a session with ADMIN on the znode, "x" to others. One request per
        path, each answered before the next: for the few broker registrations."""
        return self._retried(lambda: self._get_acls(paths))

    def _get_acls(self, paths: Sequence[str]) -> list[list[tuple[str, str, int]] | None]:
        out: list[list[tuple[str, str, int]] | None] = []
        for xid, path in enumerate(paths, start=1):
            encoded = (self._chroot + path).encode()
            self._sock.sendall(_REQUEST_HEADER.pack(12 + len(encoded), xid, OP_GET_ACL) + _I32.pack(len(encoded))
                               + encoded)
            frame = self._read_frame()
            answered, _, err = _REPLY_HEADER.unpack_from(frame, 0)
            if answered != xid:
                raise BulkReadError(f"ZooKeeper answered request {answered} where {xid} was due")
            if err == ERR_NO_NODE:
                out.append(None)
                continue
            if err == ERR_NO_AUTH:
                out.append([])
                continue
            if err != 0:
                raise BulkReadError(f"ZooKeeper error {err} reading the ACL of {path}")
            out.append(decode_acl(frame, _REPLY_HEADER.size)[0])
        return out

    def get_many(self, paths: Sequence[str], *,
                 unreadable_as_missing: bool = False) -> list[tuple[bytes, ZnodeStat] | None]:
        """GetData of every path, in order (None for a missing znode, and with `unreadable_as_missing` for one
        this session may not read, rather than ZkAuthError)."""
        return self._retried(lambda: self._multi_read(OP_GET_DATA, paths, unreadable_as_missing))

    def children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        """GetChildren of every path, in order (None for a missing znode)."""
        return self._retried(lambda: self._multi_read(OP_GET_CHILDREN, paths))

    def _multi_read(self, op: int, paths: Sequence[str], unreadable_as_missing: bool = False) -> list:
        """Send every read in MultiReads of MULTI_READ_OPS, a sender thread writing while this one
        decodes the replies (at most WINDOW_REQUESTS unanswered), and return the results in order."""
        assert self._sock is not None, "open() first"
        sock = self._sock  # the sender writes to this connection only, even after a reconnection
        chunks = [paths[i:i + MULTI_READ_OPS] for i in range(0, len(paths), MULTI_READ_OPS)]
        errors: list[BaseException] = []
        window = threading.Semaphore(WINDOW_REQUESTS)

        def send() -> None:
            try:
                for xid, chunk in enumerate(chunks, start=1):
                    window.acquire()
                    sock.sendall(encode_multi_read(xid, op, chunk, self._chroot))
            except BaseException as exc:  # noqa: BLE001 - reported by the reading side
                errors.append(exc)

        sender = threading.Thread(target=send, name="zk-bulk-send", daemon=True)
        sender.start()
        results: list = []
        try:
            for xid, chunk in enumerate(chunks, start=1):
                frame = self._read_frame()
                window.release()
                (answered,) = _I32.unpack_from(frame, 0)
                if answered != xid:  # ZooKeeper answers a session's requests in order, and we set no watches
                    raise BulkReadError(f"ZooKeeper answered request {answered} where {xid} was due")
                results.extend(decode_multi_read(frame, op, chunk, self._endpoint.credentials, unreadable_as_missing))
        except BaseException:
            # The connection is out of step (replies unread): stop it, and let the sender leave it before anyone
            # closes it (session.py, "Closing"). A sender waiting for replies no one reads now ends too.
            session.stop_io(sock)
            for _ in chunks:
                window.release()
            sender.join()
            raise
        sender.join()
        if errors:
            raise ConnectionLost(f"sending bulk requests failed: {errors[0]}")
        return results


def _string(frame: bytes, pos: int) -> tuple[str, int]:
    (length,) = _I32.unpack_from(frame, pos)
    return frame[pos + 4:pos + 4 + max(length, 0)].decode(), pos + 4 + max(length, 0)


def decode_acl(frame: bytes, pos: int) -> tuple[list[tuple[str, str, int]], int]:
    """A jute vector of ACL at `pos`: its (scheme, id, perms) entries and the position after it."""
    (count,) = _I32.unpack_from(frame, pos)
    pos += 4
    entries = []
    for _ in range(max(count, 0)):
        (perms,) = _I32.unpack_from(frame, pos)
        scheme, pos = _string(frame, pos + 4)
        ident, pos = _string(frame, pos)
        entries.append((scheme, ident, perms))
    return entries, pos


def encode_multi_read(xid: int, op: int, paths: Sequence[str], chroot: str = "") -> bytes:
    """One MultiRead frame: `op` (GetData or GetChildren, no watch) of each path."""
    parts = []
    head = _MULTI_HEADER.pack(op, False, -1)
    for path in paths:
        encoded = (chroot + path).encode()
        parts.append(head + _I32.pack(len(encoded)) + encoded + b"\0")
    parts.append(_MULTI_HEADER.pack(OP_ERROR, True, -1))
    body = b"".join(parts)
    return _REQUEST_HEADER.pack(8 + len(body), xid, OP_MULTI_READ) + body


def decode_multi_read(frame: bytes, op: int, paths: Sequence[str], credentials: ZkCredentials | None = None,
                      unreadable_as_missing: bool = False) -> list:
    """The results of a MultiRead reply, one per path: GetData's (data, ZnodeStat), GetChildren's
    names, or None for a missing znode; NoAuth gives None with `unreadable_as_missing`, else raises
    ZkAuthError (in terms of `credentials`); any other failure raises BulkReadError."""
    _, _, err = _REPLY_HEADER.unpack_from(frame, 0)
    if err != 0:
        raise BulkReadError(f"ZooKeeper error {err} on a MultiRead of {len(paths)} reads from {paths[0]} "
                            "(bulk reads need ZooKeeper 3.6 or newer)")
    out: list = []
    pos = _REPLY_HEADER.size
    while True:
        kind, done, _ = _MULTI_HEADER.unpack_from(frame, pos)
        pos += _MULTI_HEADER.size
        if done:
            break
        if kind == OP_ERROR:
            (code,) = _I32.unpack_from(frame, pos)
            pos += 4
            if code == ERR_NO_AUTH and not unreadable_as_missing:
                raise ZkAuthError(no_auth_message(f"a read of {paths[len(out)]}", credentials))
            if code not in (ERR_NO_NODE, ERR_NO_AUTH):
                raise BulkReadError(f"ZooKeeper error {code} reading {paths[len(out)]}")
            out.append(None)
        elif kind != op:
            raise BulkReadError(f"a MultiRead answered result type {kind} for a read of type {op}")
        elif op == OP_GET_DATA:
            (length,) = _I32.unpack_from(frame, pos)
            pos += 4
            data = frame[pos:pos + length] if length > 0 else b""
            pos += max(length, 0)
            stat = _STAT.unpack_from(frame, pos)
            pos += _STAT.size
            out.append((data, ZnodeStat(stat[0], stat[1], stat[4], stat[7], stat[9])))
        else:
            (count,) = _I32.unpack_from(frame, pos)
            pos += 4
            names = []
            for _ in range(max(count, 0)):
                (length,) = _I32.unpack_from(frame, pos)
                names.append(frame[pos + 4:pos + 4 + length].decode())
                pos += 4 + length
            out.append(names)
    if len(out) != len(paths):
        raise BulkReadError(f"a MultiRead of {len(paths)} reads answered {len(out)}")
    return out


def get_many(endpoint: ZkEndpoint | str, paths: Iterable[str]) -> list[tuple[bytes, ZnodeStat] | None]:
    """GetData for every path (None where missing), on a new session synced first.

    One session: in MultiReads, several sessions at once are slower than one
    (docs/perf/zookeeper-bulk-reads.md)."""
    with BulkReader(endpoint) as reader:
        reader.sync()
        return reader.get_many(list(paths))


def children_many(endpoint: ZkEndpoint | str, paths: Iterable[str]) -> list[list[str] | None]:
    """GetChildren for every path (None where missing), on a new session synced first."""
    with BulkReader(endpoint) as reader:
        reader.sync()
        return reader.children_many(list(paths))
