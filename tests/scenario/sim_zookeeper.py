"""A deterministic in-memory ZooKeeper for simulations, driven by a `ManualClock`.

What it keeps, as ZooKeeper does:

- sessions: opened, touched (the client's heartbeat), closed, or expired once untouched for
  longer than their timeout (`expire_due`, called when the simulation moves time);
  an expired or closed session can do nothing more (`SessionExpired`);
- znodes with data, a version (raised by every set), the zxid that created them (czxid:
  replog's broker epoch) and, for ephemerals, the owning session, removed with it;
- one-shot watches: a data watch (`get`/`exists`) fires once on the znode's creation, change
  or deletion, a child watch (`get_children`) once on a child's creation or deletion. A fired
  watch is not called: it becomes a `Notification` in one queue the simulation drains
  (`take_notification`), so the order in which members hear of changes is the seed's. A
  session's expiry is queued the same way, for its owner to learn;
- conditional writes (`expected_version`, -1 for any) failing with `BadVersion`, and
  `multi`: all operations (`Create`, `SetData`, `Delete`, `Check`) or none, with the index
  and error of the first that failed.

Nothing happens by itself and nothing is random: one seed replays exactly.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from replog.common.clock import ManualClock

SESSION_TIMEOUT_MS = 6_000
ANY_VERSION = -1


class ZkError(Exception):
    """A refusal ZooKeeper answers with; the subclass names which."""


class NoNode(ZkError):
    pass


class NodeExists(ZkError):
    pass


class BadVersion(ZkError):
    pass


class NotEmpty(ZkError):
    pass


class SessionExpired(ZkError):
    pass


class MultiFailed(ZkError):
    """A `multi` applied nothing: operation `index` (`op`) failed with `error`."""

    def __init__(self, index: int, op, error: ZkError) -> None:
        super().__init__(f"operation {index} failed: {type(error).__name__}: {error}")
        self.index = index
        self.op = op
        self.error = error


class Stat(NamedTuple):
    version: int
    czxid: int
    mzxid: int
    ephemeral_owner: int  # 0: persistent
    children_count: int


class Create(NamedTuple):
    path: str
    data: bytes = b""
    ephemeral: bool = False


class SetData(NamedTuple):
    path: str
    data: bytes
    expected_version: int = ANY_VERSION


class Delete(NamedTuple):
    path: str
    expected_version: int = ANY_VERSION


class Check(NamedTuple):
    path: str
    expected_version: int


Operation = Create | SetData | Delete | Check

CREATED, CHANGED, DELETED, CHILDREN, EXPIRED = "created", "changed", "deleted", "children", "expired"


class Notification(NamedTuple):
    """A fired watch (`kind` created/changed/deleted/children), or `expired` for the session itself."""

    session_id: int
    kind: str
    path: str


@dataclass
class Znode:
    data: bytes
    czxid: int
    mzxid: int
    ephemeral_owner: int = 0
    version: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> Stat:
        return Stat(self.version, self.czxid, self.mzxid, self.ephemeral_owner, len(self.children))


@dataclass
class Session:
    session_id: int
    owner: str
    timeout_ms: int
    last_heard_ms: int
    ephemerals: set[str] = field(default_factory=set)


def _parent(path: str) -> str:
    assert path.startswith("/") and path != "/" and not path.endswith("/"), f"bad znode path {path!r}"
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


class SimZooKeeper:
    def __init__(self, clock: ManualClock, *, session_timeout_ms: int = SESSION_TIMEOUT_MS) -> None:
        self.clock = clock
        self.session_timeout_ms = session_timeout_ms
        self._zxid = 0
        self._next_session = 0x1000
        self.nodes: dict[str, Znode] = {"/": Znode(b"", 0, 0)}
        self.sessions: dict[int, Session] = {}
        self._data_watches: dict[str, set[int]] = {}
        self._child_watches: dict[str, set[int]] = {}
        self.notifications: deque[Notification] = deque()
        self.expiries = 0
        self.closes = 0
        # Called with (session id, operations) after every write ZooKeeper accepted: the simulation's checks.
        self.observer: Callable[[int, list[Operation]], None] | None = None

    # --- sessions --------------------------------------------------------------------

    def open_session(self, owner: str) -> int:
        self._next_session += 1
        session_id = self._next_session
        self.sessions[session_id] = Session(session_id, owner, self.session_timeout_ms, self.clock.monotonic_ms())
        return session_id

    def alive(self, session_id: int) -> bool:
        return session_id in self.sessions

    def touch(self, session_id: int) -> None:
        """The client's heartbeat (any request also counts)."""
        self._session(session_id).last_heard_ms = self.clock.monotonic_ms()

    def close_session(self, session_id: int) -> None:
        """The client ends its session: its ephemerals go at once."""
        if session_id in self.sessions:
            self.closes += 1
            self._end(session_id)

    def expire(self, session_id: int) -> None:
        """Expire the session now, as the servers do when they stop hearing from its client."""
        self.expiries += 1
        self._end(session_id)
        self.notifications.append(Notification(session_id, EXPIRED, ""))

    def expire_due(self) -> list[int]:
        """Expire every session not heard from for longer than its timeout; returns their ids."""
        now_ms = self.clock.monotonic_ms()
        due = [s.session_id for s in self.sessions.values() if now_ms - s.last_heard_ms > s.timeout_ms]
        for session_id in due:
            self.expire(session_id)
        return due

    def _end(self, session_id: int) -> None:
        session = self.sessions.pop(session_id)
        for path in sorted(session.ephemerals, reverse=True):
            self._remove(path)
        for watchers in (*self._data_watches.values(), *self._child_watches.values()):
            watchers.discard(session_id)

    def _session(self, session_id: int) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionExpired(f"session {session_id:#x} is expired or closed")
        session.last_heard_ms = self.clock.monotonic_ms()
        return session

    # --- reads -------------------------------------------------------------------------

    def get(self, session_id: int, path: str, *, watch: bool = False) -> tuple[bytes, Stat]:
        self._session(session_id)
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if watch:
            self._data_watches.setdefault(path, set()).add(session_id)
        return node.data, node.stat()

    def exists(self, session_id: int, path: str, *, watch: bool = False) -> Stat | None:
        """The znode's stat or None; a watch is set either way (it fires on creation too)."""
        self._session(session_id)
        if watch:
            self._data_watches.setdefault(path, set()).add(session_id)
        node = self.nodes.get(path)
        return None if node is None else node.stat()

    def get_children(self, session_id: int, path: str, *, watch: bool = False) -> list[str]:
        self._session(session_id)
        node = self.nodes.get(path)
        if node is None:
            raise NoNode(path)
        if watch:
            self._child_watches.setdefault(path, set()).add(session_id)
        return sorted(node.children)

    # --- writes ------------------------------------------------------------------------

    def create(self, session_id: int, path: str, data: bytes = b"", *, ephemeral: bool = False) -> Stat:
        self._commit(session_id, [Create(path, data, ephemeral)], single=True)
        return self.nodes[path].stat()

    def set(self, session_id: int, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        self._commit(session_id, [SetData(path, data, expected_version)], single=True)
        return self.nodes[path].stat()

    def delete(self, session_id: int, path: str, expected_version: int = ANY_VERSION) -> None:
        self._commit(session_id, [Delete(path, expected_version)], single=True)

    def ensure_path(self, session_id: int, path: str) -> None:
        """Create `path` and its missing parents as empty persistent znodes."""
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:depth])
            if prefix not in self.nodes:
                self.create(session_id, prefix)

    def multi(self, session_id: int, ops: list[Operation]) -> None:
        """Every operation, or none: raises `MultiFailed` naming the first that would fail."""
        self._commit(session_id, ops, single=False)

    def _commit(self, session_id: int, ops: list[Operation], *, single: bool) -> None:
        """Apply `ops` if all succeed; a single operation raises its own error, a multi `MultiFailed`."""
        self._session(session_id)
        for index, op in enumerate(ops):
            error = self._refusal(op, ops[:index])
            if error is not None:
                if single:
                    raise error
                raise MultiFailed(index, op, error)
        self._zxid += 1
        for op in ops:
            self._perform(session_id, op)
        if self.observer is not None:
            self.observer(session_id, ops)

    def _refusal(self, op: Operation, earlier: list[Operation]) -> ZkError | None:
        """What `op` would fail with after `earlier` (which are known to succeed)."""
        exists, version, children = self._projected(op.path, earlier)
        if type(op) is Create:
            if exists:
                return NodeExists(op.path)
            if not self._projected(_parent(op.path), earlier)[0]:
                return NoNode(_parent(op.path))
            return None
        if not exists:
            return NoNode(op.path)
        if type(op) is Delete and children:
            return NotEmpty(op.path)
        expected = op.expected_version
        if expected != ANY_VERSION and expected != version:
            return BadVersion(f"{op.path}: version {version}, expected {expected}")
        return None

    def _projected(self, path: str, earlier: list[Operation]) -> tuple[bool, int, int]:
        """(exists, version, child count) of `path` once `earlier` operations are applied."""
        node = self.nodes.get(path)
        exists, version = node is not None, node.version if node else 0
        children = len(node.children) if node else 0
        for op in earlier:
            if op.path == path:
                if type(op) is Create:
                    exists, version, children = True, 0, 0
                elif type(op) is SetData:
                    version += 1
                elif type(op) is Delete:
                    exists = False
            elif path != "/" and path == _parent(op.path):
                children += 1 if type(op) is Create else -1 if type(op) is Delete else 0
        return exists, version, children

    def _perform(self, session_id: int, op: Operation) -> None:
        if type(op) is Create:
            owner = session_id if op.ephemeral else 0
            self.nodes[op.path] = Znode(op.data, self._zxid, self._zxid, owner)
            if op.ephemeral:
                self.sessions[session_id].ephemerals.add(op.path)
            self.nodes[_parent(op.path)].children.add(op.path.rsplit("/", 1)[1])
            self._fire(self._data_watches, op.path, CREATED)
            self._fire(self._child_watches, _parent(op.path), CHILDREN)
        elif type(op) is SetData:
            node = self.nodes[op.path]
            node.data, node.version, node.mzxid = op.data, node.version + 1, self._zxid
            self._fire(self._data_watches, op.path, CHANGED)
        elif type(op) is Delete:
            owner = self.nodes[op.path].ephemeral_owner
            if owner:
                self.sessions[owner].ephemerals.discard(op.path)
            self._remove(op.path)

    def _remove(self, path: str) -> None:
        del self.nodes[path]
        self.nodes[_parent(path)].children.discard(path.rsplit("/", 1)[1])
        self._fire(self._data_watches, path, DELETED)
        self._fire(self._child_watches, path, DELETED)
        self._fire(self._child_watches, _parent(path), CHILDREN)

    def _fire(self, watches: dict[str, set[int]], path: str, kind: str) -> None:
        """One-shot: each session watching `path` hears once, then must watch again."""
        watchers = watches.pop(path, None)
        for session_id in sorted(watchers or ()):
            self.notifications.append(Notification(session_id, kind, path))

    # --- the simulation's side ------------------------------------------------------------

    def take_notification(self) -> Notification | None:
        return self.notifications.popleft() if self.notifications else None
