"""A thin kazoo adapter: the connection (waited for, or with a deadline), retried idempotent
reads, session-state callbacks, and the persistent parents of the layout.

Writes are not retried here: a controller write must fail loudly if its
session or epoch is gone (see the controller's executor), and a retried
non-idempotent write could apply twice.

Reaching ZooKeeper. kazoo's connection thread tries the hosts in turn and, after a failed
round, pauses before the next, each pause about twice the last. kazoo lets the pause grow to
an hour, so a process that had lost ZooKeeper for a few minutes would go on without it for
minutes after it came back; here the pause stops growing at `connect_backoff_max_ms`. That
thread tries until the client is stopped. A service `connect`s: it waits for as long as
ZooKeeper takes, because without it a service can do nothing useful, and a broker that gave up
at start left the partitions it alone held offline until a person started it again. Tools and
tests `start` with a deadline. kazoo logs each failed attempt; `_ConnectionLogFilter` lets
those lines through at a bounded rate, and `connect` says itself that it is waiting.

TLS. An endpoint with TLS files (tls.py) has kazoo open each connection with TLS, checking the
server's certificate and host name and presenting this process's certificate; a server that refuses
the certificate looks like one that does not answer, and `connect` keeps waiting and saying so.

Authentication. With credentials (auth.py), kazoo sends one digest auth packet per identity
on every connection, and every znode this client creates gets the ACL schema/znode_acls.py gives
its path (`acl`). `ensure_layout` creates the persistent znodes, gives them and the root of the
connect string their ACLs where they are still open to anyone, and then reads /brokers: a
password ZooKeeper does not know gives another identity, not an error, so this read is
where a wrong password shows, as a StartupError naming the identity.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
)
from kazoo.retry import KazooRetry
from kazoo.security import ACL
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from replog.common.service import StartupError
from replog.common.zk import schema
from replog.common.zk.auth import ZkEndpoint
from replog.common.zk.bulk import no_auth_message
from replog.common.zk.schema import znode_acls as acls

log = logging.getLogger(__name__)

SessionListener = Callable[[str], None]

CONNECT_BACKOFF_FIRST_S = 0.1
START_TIMEOUT_S = 10.0
# A connection normally takes milliseconds: none after this long means ZooKeeper is not answering.
WAIT_REPORT_FIRST_S = 1.0
WAIT_REPORT_INTERVAL_S = 15.0
# `connect` runs on a service's main thread, which must see a SIGTERM promptly (service.StopSignal).
STOP_POLL_S = 0.2

_retry_reads = retry(
    retry=retry_if_exception_type((ConnectionLoss, OperationTimeoutError)),
    wait=wait_exponential(multiplier=0.05, max=1.0),
    stop=stop_after_attempt(8),
    reraise=True,
)


class ZkUnavailableError(RuntimeError):
    """ZooKeeper could not be reached in time."""


class _ConnectionLogFilter(logging.Filter):
    """Passes each of kazoo's per-attempt connection messages at most once per `interval_s`.

    Every failed attempt logs a warning (and a line at info); with attempts a few seconds
    apart, a ZooKeeper outage would otherwise fill every service's log. With no limit on
    attempts, kazoo's retry ends only when `stop` interrupts it, which kazoo reports as a
    failure to connect "within the connection retry policy": that line is dropped."""

    PER_ATTEMPT = frozenset({
        "Connecting to %s(%s):%s, use_ssl: %r",
        "Connection dropped: %s",
        "Connection time-out: %s",
        "Cannot resolve %s: %s",
    })
    STOPPED = "Failed connecting to Zookeeper within the connection retry policy."

    def __init__(self, interval_s: float) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._passed_s: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == self.STOPPED:
            return False
        if record.msg not in self.PER_ATTEMPT:
            return True
        now_s = time.monotonic()
        with self._lock:
            passed_s = self._passed_s.get(record.msg)
            if passed_s is not None and now_s - passed_s < self._interval_s:
                return False
            self._passed_s[record.msg] = now_s
        return True


def _filter_connection_logs() -> None:
    kazoo_log = logging.getLogger("kazoo.client")  # kazoo's connection thread logs here
    if not any(isinstance(f, _ConnectionLogFilter) for f in kazoo_log.filters):
        kazoo_log.addFilter(_ConnectionLogFilter(WAIT_REPORT_INTERVAL_S))


class ZkClient:
    """Owns one kazoo session."""

    def __init__(self, endpoint: ZkEndpoint | str, *, session_timeout_ms: int = 6000,
                 connect_backoff_max_ms: int = 2000) -> None:
        assert connect_backoff_max_ms > 0, connect_backoff_max_ms
        self.endpoint = ZkEndpoint.of(endpoint)
        connect = self.endpoint.connect
        self.connect_string = connect
        self.session_timeout_ms = session_timeout_ms
        self.connect_backoff_max_ms = connect_backoff_max_ms
        _filter_connection_logs()
        connection_retry = KazooRetry(max_tries=-1, delay=CONNECT_BACKOFF_FIRST_S, backoff=2,
                                      max_delay=connect_backoff_max_ms / 1000.0)
        self.kazoo = KazooClient(timeout=session_timeout_ms / 1000.0, connection_retry=connection_retry,
                                 **self.endpoint.kazoo_args())
        self._listeners: list[SessionListener] = []
        self.kazoo.add_listener(self._on_state)

    def connect(self, stopping: threading.Event, *, report_interval_s: float = WAIT_REPORT_INTERVAL_S) -> bool:
        """Connect, waiting for as long as ZooKeeper takes to answer; False if `stopping` is set first.

        Logs once that it is waiting (if the first attempts fail), then again every
        `report_interval_s` while it still is. Waits in short steps, so that a stop signal handled
        on this thread is seen at once. After False the caller still `stop`s the client."""
        if stopping.is_set():
            return False
        live = self.kazoo.start_async()
        started_s = time.monotonic()
        reports = 0
        next_report_s = WAIT_REPORT_FIRST_S
        while not live.wait(STOP_POLL_S):
            if stopping.is_set():
                log.info("stopped while waiting for ZooKeeper at %s", self.connect_string)
                return False
            waited_s = time.monotonic() - started_s
            if waited_s >= next_report_s:
                if reports == 0:
                    log.warning("waiting for ZooKeeper at %s: no answer yet; retrying, with pauses growing to "
                                "about %g s", self.connect_string, self.connect_backoff_max_ms / 1000)
                else:
                    log.warning("still waiting for ZooKeeper at %s after %.0f s", self.connect_string, waited_s)
                reports += 1
                next_report_s = waited_s + report_interval_s
        if reports:
            log.info("reached ZooKeeper at %s after %.1f s", self.connect_string, time.monotonic() - started_s)
        return True

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Connect within `timeout_s` or raise ZkUnavailableError (for tools and tests; a service `connect`s)."""
        if not self.kazoo.start_async().wait(timeout_s):
            self.stop()
            raise ZkUnavailableError(f"cannot reach ZooKeeper at {self.connect_string} within {timeout_s:g} s")

    def stop(self) -> None:
        try:
            self.kazoo.stop()
        finally:
            self.kazoo.close()

    def add_session_listener(self, listener: SessionListener) -> None:
        """`listener` gets "connected", "suspended" or "lost" (session expired) on kazoo's thread."""
        self._listeners.append(listener)

    def _on_state(self, state: str) -> None:
        name = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended", KazooState.LOST: "lost"}[state]
        log.info("zookeeper session %s", name)
        for listener in self._listeners:
            listener(name)

    @property
    def session_id(self) -> int:
        return self.kazoo.client_id[0] if self.kazoo.client_id else 0

    def acl(self, path: str) -> list[ACL]:
        """The ACL a znode this client creates at `path` gets (open when unauthenticated)."""
        return self.endpoint.kazoo_acl(path)

    def ensure_layout(self) -> None:
        """Create the persistent znodes (parents first), claim them and the root, and check this session may read.

        With credentials, a persistent znode is created open and claimed (given its schema ACL) once every one
        of them exists: processes start together, and a parent claimed early would refuse the creation of a
        child (/brokers admits no new children) by the next process. Whoever claims a znode first wins."""
        for path in schema.PERSISTENT_PATHS:
            self._ensure(path)
        if self.endpoint.credentials is None:
            return
        for path in (*schema.PERSISTENT_PATHS, "/"):
            self._claim(path)
        try:
            self.kazoo.get_children(schema.BROKERS)
        except NoAuthError:
            raise StartupError(no_auth_message(f"a read of {schema.BROKERS}", self.endpoint.credentials)) from None

    @_retry_reads
    def _ensure(self, path: str) -> None:
        if self.kazoo.exists(path) is not None:
            return  # creating needs CREATE on the parent, which most identities lack once the layout is claimed
        try:
            self.kazoo.create(path, b"")  # open until claimed (ensure_layout)
        except NodeExistsError:
            pass
        except NoAuthError:
            # ZooKeeper checks the parent's ACL before whether the child exists: another process may have created
            # `path` and claimed its parent since the look above. Then there is nothing to do.
            if self.kazoo.exists(path) is None:
                raise StartupError(no_auth_message(f"the creation of {path}", self.endpoint.credentials)) from None

    @_retry_reads
    def _claim(self, path: str) -> None:
        """Give `path` its schema ACL if it is still open to anyone (ZooKeeper's default ACL, which the root of
        a new ZooKeeper or chroot has): otherwise an anonymous client could, for one, create /controller while
        no controller holds the seat."""
        try:
            current, stat = self.kazoo.get_acls(path)
        except NoAuthError:
            return  # claimed, with an ACL that does not name this identity
        if not any(entry.id.scheme == "world" for entry in current):
            return
        try:
            self.kazoo.set_acls(path, self.acl(path), version=stat.aversion)
        except (BadVersionError, NoAuthError):
            return  # another process claimed it first
        log.info("claimed %s%s for replog: %s", self.connect_string, "" if path == "/" else path,
                 acls.describe(acls.acl_of(path)))

    @_retry_reads
    def get(self, path: str):
        """(data, stat), or None when the znode does not exist."""
        try:
            return self.kazoo.get(path)
        except NoNodeError:
            return None

    @_retry_reads
    def children(self, path: str) -> list[str]:
        try:
            return self.kazoo.get_children(path)
        except NoNodeError:
            return []
