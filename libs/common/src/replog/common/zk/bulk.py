"""Pipelined bulk reads from ZooKeeper, for loading a whole cluster's state.

Why: kazoo issues one request per call and pays Python overhead on both sides
of each; reading 100K partition-state znodes that way takes about 20 s on the
project's machine (DESIGN.md section 9), which alone breaks the controller
failover goal. The server itself answers reads far faster. This reader opens
its own short read-only session, writes every request back to back without
waiting (ZooKeeper answers a session's requests in order), and decodes the
replies with precompiled structs, so the cost is one encode and one decode per
znode. Reads are as consistent as any ZooKeeper read on one session: each
reply reflects a state at least as new as the previous one (a `sync` first
makes the first read see every write committed before the call).

Only GetData, GetChildren and Sync are spoken; watches are not set. Writes
never go through here (the controller's bulk writes: multi_writer.py).

Wire format (jute, big-endian): every frame is an int32 length then a body.
Connect: protocolVersion i32, lastZxidSeen i64, timeOut i32, sessionId i64,
passwd buffer, readOnly bool. Request: xid i32, type i32, then for GetData /
GetChildren a path (i32 length + UTF-8) and a watch bool. Reply: xid i32,
zxid i64, err i32, then for GetData a buffer and a Stat (i64 czxid, mzxid,
ctime, mtime; i32 version, cversion, aversion; i64 ephemeralOwner; i32
dataLength, numChildren; i64 pzxid), for GetChildren a vector of strings.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

_I32 = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">iii")      # length, xid, type
_REPLY_HEADER = struct.Struct(">iqi")        # xid, zxid, err
_STAT = struct.Struct(">qqqqiiiqiiq")
_CONNECT = struct.Struct(">iqiqi")           # protocolVersion, lastZxid, timeout, sessionId, passwd len

OP_GET_DATA = 4
OP_GET_CHILDREN = 8
OP_SYNC = 9
OP_CLOSE = -11
ERR_NO_NODE = -101
WINDOW_REQUESTS = 20_000   # requests in flight at most, so replies never fill both buffers


@dataclass(frozen=True)
class ZnodeStat:
    czxid: int
    mzxid: int
    version: int
    ephemeral_owner: int
    num_children: int


class BulkReadError(RuntimeError):
    pass


def parse_connect(connect: str) -> tuple[list[list[str]], str]:
    """(host, port) pairs and the chroot ("" for none) of a connect string."""
    hosts, _, chroot = connect.partition("/")
    return [h.rsplit(":", 1) for h in hosts.split(",")], ("/" + chroot).rstrip("/") if chroot else ""


def open_session(hosts: list[list[str]], timeout_s: float, *, receive_buffer: int = 0) -> socket.socket:
    """A new ZooKeeper session on the first host that answers (the socket, handshake done)."""
    last_error: Exception | None = None
    for host, port in hosts:
        try:
            sock = socket.create_connection((host, int(port)), timeout=timeout_s)
            break
        except OSError as exc:
            last_error = exc
    else:
        raise BulkReadError(f"cannot connect to ZooKeeper: {last_error}")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    body = _CONNECT.pack(0, 0, int(timeout_s * 1000), 0, 16) + b"\0" * 16 + b"\0"
    sock.sendall(_I32.pack(len(body)) + body)
    if len(read_frame(sock, bytearray())) < 20:
        sock.close()
        raise BulkReadError("ZooKeeper refused the session")
    return sock


def close_session(sock: socket.socket) -> None:
    """End the session at once (rather than when it times out on the server) and close the socket."""
    try:
        sock.sendall(_REQUEST_HEADER.pack(8, 0x7FFFFFF0, OP_CLOSE))
    except OSError:
        pass
    sock.close()


def read_frame(sock: socket.socket, buffer: bytearray) -> bytes:
    """The next length-prefixed frame; `buffer` keeps what was received beyond it."""
    while True:
        if len(buffer) >= 4:
            (length,) = _I32.unpack_from(buffer, 0)
            if len(buffer) >= 4 + length:
                frame = bytes(buffer[4:4 + length])
                del buffer[:4 + length]
                return frame
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise BulkReadError("ZooKeeper closed the connection")
        buffer += chunk


class BulkReader:
    """A short-lived session for bulk reads: `with BulkReader(connect) as r: r.get_many(paths)`."""

    def __init__(self, connect: str, timeout_s: float = 30.0) -> None:
        self._hosts, self._chroot = parse_connect(connect)
        self._timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._buffer = bytearray()

    def __enter__(self) -> "BulkReader":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        self._sock = open_session(self._hosts, self._timeout_s, receive_buffer=4 << 20)

    def close(self) -> None:
        if self._sock is None:
            return
        close_session(self._sock)
        self._sock = None

    def _read_frame(self) -> bytes:
        return read_frame(self._sock, self._buffer)

    def _encode(self, xid: int, op: int, path: str) -> bytes:
        encoded = (self._chroot + path).encode()
        body_length = 8 + 4 + len(encoded) + (0 if op == OP_SYNC else 1)
        frame = _REQUEST_HEADER.pack(body_length, xid, op) + _I32.pack(len(encoded)) + encoded
        return frame if op == OP_SYNC else frame + b"\0"

    def _pipeline(self, op: int, paths: Sequence[str]) -> list[bytes | None]:
        """Send every request, collect every reply body (None for a missing znode)."""
        assert self._sock is not None, "open() first"
        results: list[bytes | None] = [None] * len(paths)
        errors: list[BaseException] = []
        window = threading.Semaphore(WINDOW_REQUESTS)

        def send() -> None:
            try:
                chunk: list[bytes] = []
                for xid, path in enumerate(paths, start=1):
                    window.acquire()
                    chunk.append(self._encode(xid, op, path))
                    if len(chunk) >= 512:
                        self._sock.sendall(b"".join(chunk))
                        chunk = []
                if chunk:
                    self._sock.sendall(b"".join(chunk))
            except BaseException as exc:  # noqa: BLE001 - reported by the reading side
                errors.append(exc)

        sender = threading.Thread(target=send, name="zk-bulk-send", daemon=True)
        sender.start()
        for _ in range(len(paths)):
            frame = self._read_frame()
            xid, _zxid, err = _REPLY_HEADER.unpack_from(frame, 0)
            window.release()
            if xid <= 0:  # a notification or ping would have a negative xid; we set no watches
                continue
            if err == 0:
                results[xid - 1] = frame[16:]
            elif err != ERR_NO_NODE:
                raise BulkReadError(f"ZooKeeper error {err} reading {paths[xid - 1]}")
        sender.join()
        if errors:
            raise BulkReadError(f"sending bulk requests failed: {errors[0]}")
        return results

    def sync(self, path: str = "/") -> None:
        """Make the next reads see every write committed before now."""
        self._pipeline(OP_SYNC, [path])

    def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        out: list[tuple[bytes, ZnodeStat] | None] = []
        for body in self._pipeline(OP_GET_DATA, paths):
            if body is None:
                out.append(None)
                continue
            (length,) = _I32.unpack_from(body, 0)
            data = b"" if length < 0 else body[4:4 + length]
            stat = _STAT.unpack_from(body, 4 + max(length, 0))
            out.append((data, ZnodeStat(stat[0], stat[1], stat[4], stat[7], stat[9])))
        return out

    def children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        out: list[list[str] | None] = []
        for body in self._pipeline(OP_GET_CHILDREN, paths):
            if body is None:
                out.append(None)
                continue
            (count,) = _I32.unpack_from(body, 0)
            names, pos = [], 4
            for _ in range(max(count, 0)):
                (length,) = _I32.unpack_from(body, pos)
                names.append(body[pos + 4:pos + 4 + length].decode())
                pos += 4 + length
            out.append(names)
        return out


SESSIONS_DEFAULT = 8


def _parallel(connect: str, paths: Sequence[str], sessions: int, read) -> list:
    """Split `paths` over `sessions` sessions read at once (the server serves one
    session's requests in order, several sessions on all its cores)."""
    sessions = max(1, min(sessions, len(paths) // 1000 + 1))
    if sessions == 1:
        with BulkReader(connect) as reader:
            reader.sync()
            return read(reader, paths)
    chunks = [paths[i::sessions] for i in range(sessions)]
    results: list[list | None] = [None] * sessions
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            with BulkReader(connect) as reader:
                reader.sync()
                results[index] = read(reader, chunks[index])
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,), name=f"zk-bulk-{i}") for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    merged: list = [None] * len(paths)
    for index, chunk_result in enumerate(results):
        merged[index::sessions] = chunk_result
    return merged


def get_many(connect: str, paths: Iterable[str], sessions: int = SESSIONS_DEFAULT) -> list[tuple[bytes, ZnodeStat] | None]:
    """GetData for every path (None where missing), each session synced first."""
    return _parallel(connect, list(paths), sessions, lambda reader, chunk: reader.get_many(chunk))


def children_many(connect: str, paths: Iterable[str], sessions: int = SESSIONS_DEFAULT) -> list[list[str] | None]:
    """GetChildren for every path (None where missing), each session synced first."""
    return _parallel(connect, list(paths), sessions, lambda reader, chunk: reader.children_many(chunk))
