"""A ZooKeeper session that reports every change under some paths: persistent
recursive watches (ZooKeeper 3.6+), which kazoo does not speak.

Why: a standby controller keeps a copy of the cluster's state so that taking
the seat does not start with reading 100K znodes (docs/architecture.md, "Who holds the seat"). One
watch per znode would mean 100K one-shot watches to re-arm; one persistent
recursive watch on ``/brokers/topics`` reports every created, deleted or
changed znode below it, for as long as the session lives.

What it gives: ``on_change(path)`` for each notification (chroot removed), on
the feed's reader thread, and ``on_change(None)`` when notifications may have
been missed: the caller must re-read everything.

When its connection breaks (the server died, or lost the quorum), the feed
resumes its session on another server of the ensemble (session.py), sets its
watches again there (the server keeps watches per connection; AddWatch), and
then calls ``on_change(None)`` once: a change made while it was away was not
reported, and one made after the callback is. When the session cannot be
resumed -- the ensemble expired it, or no server answered within its timeout --
the feed is over: ``broken`` is true, ``on_change(None)`` comes once, and the
owner opens a new feed. ``barrier()`` returns once every notification for a change
committed before the call has been delivered: ZooKeeper sends a session's
notifications and replies in order, so the reply to a ``sync`` sent now comes
after them.

Wire format (jute, as in ``bulk``, whose authentication it shares): AddWatch is
op 106 with a path and an int32 mode (1 = persistent recursive) and an empty
reply, preceded by a GetData (op 4, path, watch false) of the same path that
shows whether the session may read it; a notification is a
reply with xid -1 whose body is type i32, state i32, path; pings are op 11
with xid -2. Only the reader thread reads the socket; requests are written
under a lock and their replies (ZooKeeper answers in order) complete a FIFO of
waiters.
"""

from __future__ import annotations

import collections
import socket
import threading
import time
from typing import Callable, Sequence

from replog.common.zk import session
from replog.common.zk.auth import ZkEndpoint
from replog.common.zk.bulk import ERR_NO_AUTH, no_auth_message
from replog.common.zk.session import _I32, _REPLY_HEADER, _REQUEST_HEADER, SessionKey, ZkWireError, parse_connect

OP_GET_DATA = 4
OP_SYNC = 9
OP_PING = 11
OP_ADD_WATCH = 106
MODE_PERSISTENT_RECURSIVE = 1
XID_NOTIFICATION = -1
XID_PING = -2


class ChangeFeedBroken(RuntimeError):
    pass


class ChangeFeed:
    def __init__(self, endpoint: ZkEndpoint | str, paths: Sequence[str], on_change: Callable[[str | None], None], *,
                 session_timeout_s: float = 10.0) -> None:
        self._endpoint = ZkEndpoint.of(endpoint)
        self._hosts, self._chroot = parse_connect(self._endpoint.connect)
        self._paths = tuple(paths)
        self._on_change = on_change
        self._session_timeout_s = session_timeout_s
        self._sock: socket.socket | None = None
        self._write_lock = threading.Lock()
        self._waiters: collections.deque[tuple[threading.Event, list]] = collections.deque()
        self._xid = 0
        self._closed = threading.Event()
        self._broken = False
        self._reader: threading.Thread | None = None
        self._pinger: threading.Thread | None = None
        self._buffer = bytearray()
        self._key: SessionKey | None = None
        self._server: session.Server | None = None
        self._last_zxid = 0

    # --- life cycle ----------------------------------------------------------------------

    def open(self) -> None:
        """Connect and watch every path; changes from now on are reported. A feed that fails to open is
        broken (and closed)."""
        try:
            self._open()
        except BaseException:
            self._broken = True
            self.close()
            raise

    def _open(self) -> None:
        try:
            sock, self._key, self._server = session.connect(self._hosts, self._session_timeout_s,
                                                            credentials=self._endpoint.credentials,
                                                            tls=self._endpoint.tls)
        except (ZkWireError, OSError) as exc:
            raise ChangeFeedBroken(str(exc)) from None
        self._sock = sock
        sock.settimeout(None)
        self._reader = threading.Thread(target=self._read_loop, name="zk-change-feed", daemon=True)
        self._reader.start()
        self._pinger = threading.Thread(target=self._ping_loop, name="zk-change-feed-ping", daemon=True)
        self._pinger.start()
        for path in self._paths:
            # ZooKeeper sets a watch without checking the ACL, so a read first: credentials it does not
            # know fail here, clearly, not in the first read after a notification.
            self._request(OP_GET_DATA, self._encode_path(path) + b"\0")
            self._request(OP_ADD_WATCH, self._encode_path(path) + _I32.pack(MODE_PERSISTENT_RECURSIVE))

    def close(self) -> None:
        """End the session. The socket is closed once the reader thread has left it (session.py, "Closing")."""
        self._closed.set()
        with self._write_lock:  # no request or ping is being written, and none will be
            sock, self._sock = self._sock, None
            if sock is not None:
                try:
                    sock.sendall(_REQUEST_HEADER.pack(8, 0x7FFFFFF0, session.OP_CLOSE))
                except OSError:
                    pass
        if sock is not None:
            session.stop_io(sock)  # the reader's read returns; it reads no more (the feed is closed)
            reader = self._reader
            if reader is not None and reader is not threading.current_thread():
                # Bounded: after stop_io the reader is at most in an on_change callback, not in a read.
                reader.join(self._session_timeout_s)
            sock.close()
        self._fail_waiters()

    @property
    def broken(self) -> bool:
        return self._broken

    @property
    def session_id(self) -> int:
        return self._key.session_id if self._key is not None else 0

    def barrier(self, timeout_s: float = 10.0) -> None:
        """Return when every notification of a change committed before now has been delivered."""
        self._request(OP_SYNC, self._encode_path("/"), timeout_s)

    # --- internals -----------------------------------------------------------------------

    def _encode_path(self, path: str) -> bytes:
        encoded = (self._chroot + path).rstrip("/").encode() or b"/"
        return _I32.pack(len(encoded)) + encoded

    def _request(self, op: int, body: bytes, timeout_s: float = 10.0) -> None:
        done = threading.Event()
        outcome: list = []
        with self._write_lock:
            if self._sock is None or self._broken:
                raise ChangeFeedBroken("the change feed's session is gone, or moving to another server")
            self._xid += 1
            self._waiters.append((done, outcome))
            try:
                self._sock.sendall(_REQUEST_HEADER.pack(8 + len(body), self._xid, op) + body)
            except OSError as exc:
                raise ChangeFeedBroken(f"writing to ZooKeeper failed: {exc}") from exc
        if not done.wait(timeout_s):
            raise ChangeFeedBroken(f"ZooKeeper did not answer op {op} in {timeout_s} s")
        if not outcome:
            raise ChangeFeedBroken(f"the connection to ZooKeeper broke before op {op} was answered")
        if outcome and outcome[0] == ERR_NO_AUTH:
            raise ChangeFeedBroken(no_auth_message(f"op {op}", self._endpoint.credentials))
        if not outcome or outcome[0] != 0:
            raise ChangeFeedBroken(f"ZooKeeper answered op {op} with error {outcome[0] if outcome else 'none'}")

    def _read_frame(self, sock: socket.socket, buffer: bytearray) -> bytes:
        frame = session.read_frame(sock, buffer)
        self._last_zxid = max(self._last_zxid, session.reply_zxid(frame))
        return frame

    def _read_loop(self) -> None:
        while not self._closed.is_set():
            try:
                self._read_frames()
            except Exception:  # noqa: BLE001 - a socket closed, a malformed frame: resume elsewhere, or end
                pass
            if self._closed.is_set() or not self._resume():
                break
            self._on_change(None)  # what changed while the feed was away was not reported
        if not self._closed.is_set():
            self._broken = True
            self._fail_waiters()
            self._on_change(None)

    def _read_frames(self) -> None:
        while not self._closed.is_set():
            frame = self._read_frame(self._sock, self._buffer)
            self._dispatch(frame)

    def _dispatch(self, frame: bytes) -> None:
        xid, _zxid, err = _REPLY_HEADER.unpack_from(frame, 0)
        if xid == XID_NOTIFICATION:
            self._notify(frame)
        elif xid != XID_PING:
            done, outcome = self._waiters.popleft()
            outcome.append(err)
            done.set()

    def _notify(self, frame: bytes) -> None:
        (length,) = _I32.unpack_from(frame, 24)
        self._on_change(frame[28:28 + length].decode()[len(self._chroot):] or "/")

    def _resume(self) -> bool:
        """On the reader's thread: the session resumed on another server with every watch set again there;
        False when it cannot be (expired, or no server answered within the session timeout)."""
        with self._write_lock:
            broken, self._sock = self._sock, None
            self._fail_waiters()  # the requests in flight on the broken connection
        if broken is not None:
            broken.close()
        deadline = time.monotonic() + self._key.timeout_ms / 1000
        while not self._closed.is_set() and time.monotonic() < deadline:
            try:
                sock, self._key, server = session.connect(
                    self._hosts, self._session_timeout_s, key=self._key, last_zxid=self._last_zxid,
                    credentials=self._endpoint.credentials, avoid=self._server, deadline=deadline,
                    tls=self._endpoint.tls)
            except (session.SessionExpired, session.ZkAuthError):
                return False
            except (ZkWireError, OSError):
                continue
            buffer = bytearray()
            try:
                for path in self._paths:
                    self._add_watch(sock, buffer, path)
            except (ZkWireError, OSError, ChangeFeedBroken):
                sock.close()
                self._server = server
                continue
            sock.settimeout(None)
            with self._write_lock:
                self._sock, self._buffer, self._server = sock, buffer, server
            if self._closed.is_set():  # closed while moving: close() saw no socket to close
                session.close_session(sock)
            return True
        return False

    def _add_watch(self, sock: socket.socket, buffer: bytearray, path: str) -> None:
        """AddWatch on a connection no other thread uses yet, waiting for its answer."""
        body = self._encode_path(path) + _I32.pack(MODE_PERSISTENT_RECURSIVE)
        with self._write_lock:
            self._xid += 1
            xid = self._xid
        sock.sendall(_REQUEST_HEADER.pack(8 + len(body), xid, OP_ADD_WATCH) + body)
        while True:
            frame = self._read_frame(sock, buffer)
            answered, _, err = _REPLY_HEADER.unpack_from(frame, 0)
            if answered == XID_NOTIFICATION:
                self._notify(frame)
            elif answered == xid:
                if err != 0:
                    raise ChangeFeedBroken(f"ZooKeeper answered AddWatch {path} with error {err}")
                return

    def _ping_loop(self) -> None:
        interval_s = self._session_timeout_s / 3
        while not self._closed.wait(interval_s):
            try:
                with self._write_lock:
                    if self._sock is None:
                        continue  # moving to another server (or closed, which ends the wait)
                    self._sock.sendall(_REQUEST_HEADER.pack(8, XID_PING, OP_PING))
            except OSError:
                continue  # the reader sees the broken socket

    def _fail_waiters(self) -> None:
        while self._waiters:
            done, _ = self._waiters.popleft()
            done.set()
