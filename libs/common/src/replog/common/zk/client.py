"""A thin kazoo adapter: connection with a deadline, retried idempotent reads,
session-state callbacks, and the persistent parents of the layout.

Writes are not retried here: a controller write must fail loudly if its
session or epoch is gone (see the controller's executor), and a retried
non-idempotent write could apply twice.
"""

from __future__ import annotations

import logging
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, NoNodeError, NodeExistsError, OperationTimeoutError
from kazoo.handlers.threading import KazooTimeoutError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from replog.common.zk import schema

log = logging.getLogger(__name__)

SessionListener = Callable[[str], None]

_retry_reads = retry(
    retry=retry_if_exception_type((ConnectionLoss, OperationTimeoutError)),
    wait=wait_exponential(multiplier=0.05, max=1.0),
    stop=stop_after_attempt(8),
    reraise=True,
)


class ZkUnavailableError(RuntimeError):
    """ZooKeeper could not be reached in time."""


class ZkClient:
    """Owns one kazoo session."""

    def __init__(self, connect: str, *, session_timeout_ms: int = 6000, connect_timeout_ms: int = 10000) -> None:
        self.connect_string = connect
        self.session_timeout_ms = session_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.kazoo = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0)
        self._listeners: list[SessionListener] = []
        self.kazoo.add_listener(self._on_state)

    def start(self) -> None:
        # Each failed connection attempt logs a warning; at start-up only the
        # final one-line reason matters, so keep kazoo quiet until connected.
        kazoo_log = logging.getLogger("kazoo")
        level = kazoo_log.level
        kazoo_log.setLevel(logging.CRITICAL)
        try:
            self.kazoo.start(timeout=self.connect_timeout_ms / 1000.0)
        except KazooTimeoutError:
            self.kazoo.stop()
            self.kazoo.close()
            raise ZkUnavailableError(
                f"cannot reach ZooKeeper at {self.connect_string} within {self.connect_timeout_ms / 1000:g} s"
            ) from None
        finally:
            kazoo_log.setLevel(level)

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

    def ensure_layout(self) -> None:
        for path in schema.PERSISTENT_PATHS:
            self._ensure(path)

    @_retry_reads
    def _ensure(self, path: str) -> None:
        try:
            self.kazoo.ensure_path(path)
        except NodeExistsError:
            pass

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
