"""The client quotas in ZooKeeper: read them, and keep a snapshot current with them.

Every broker runs one `QuotaWatcher`. It keeps a kazoo DataWatch on the change marker
`/config/quotas` (zk/schema/client_quotas.py): every quota write sets the marker in the
transaction that changes the quotas, so one watch sees every change (and the marker's creation,
with the first quota of a cluster). The watch only wakes the watcher's thread, which re-reads the
folder and hands a new `QuotaSnapshot` over; a change made while it reads fires the watch again,
so the loop reads once more. A read that fails (ZooKeeper unreachable, a znode it cannot decode)
keeps the snapshot it had, logs, and is tried again after a pause: a quota is never dropped because
its znode could not be read.

The first read happens in `start`, before the broker answers clients; until a read succeeds the
snapshot is empty (no quota).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.watchers import DataWatch

from replog.common.quotas.core.model import QuotaSnapshot, principal_problem, record_problem
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)

RETRY_PAUSE_S = 1.0
STOP_WAIT_S = 5.0

Entity = str | None  # "User:<name>", or None for the default


def read_quotas(kazoo) -> dict[Entity, tuple[schema.QuotaRecord, int]]:
    """Every entity's quotas with its znode version. Raises ZkDataError for a znode that does not hold
    valid quotas, and kazoo's errors when ZooKeeper cannot answer."""
    try:
        nodes = sorted(kazoo.get_children(schema.QUOTA_USERS))
    except NoNodeError:
        return {}  # no quota was ever set
    entities = [schema.parse_quota_user_node(node) for node in nodes]
    pending = [kazoo.get_async(schema.quota_user_path(entity)) for entity in entities]
    stored: dict[Entity, tuple[schema.QuotaRecord, int]] = {}
    for entity, result in zip(entities, pending):
        try:
            data, stat = result.get()
        except NoNodeError:
            continue  # deleted with its last quota since the listing
        path = schema.quota_user_path(entity)
        record = schema.QuotaRecord.decode(data, path)
        problem = (entity is not None and principal_problem(entity)) or record_problem(record)
        if problem:
            raise schema.ZkDataError(f"{path}: {problem}")
        stored[entity] = (record, stat.version)
    return stored


class QuotaWatcher:
    """Hands `on_snapshot` a QuotaSnapshot of what ZooKeeper holds, at start and after every change."""

    def __init__(self, zk: ZkClient, on_snapshot: Callable[[QuotaSnapshot], None]) -> None:
        self._zk = zk
        self._on_snapshot = on_snapshot
        self._loaded = 0  # entities in the last snapshot handed over, for the log
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._load()
        DataWatch(self._zk.kazoo, schema.QUOTAS, self._on_marker)
        self._thread = threading.Thread(target=self._run, name="quota-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)

    def _on_marker(self, data, stat) -> bool:
        if self._stopping.is_set():
            return False  # ends the watch
        self._changed.set()
        return True

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._changed.wait()
            if self._stopping.is_set():
                return
            self._changed.clear()
            if not self._load():
                self._changed.set()
                self._stopping.wait(RETRY_PAUSE_S)

    def _load(self) -> bool:
        try:
            stored = read_quotas(self._zk.kazoo)
        except (schema.ZkDataError, KazooException, KazooTimeoutError, OSError) as exc:
            log.error("cannot read the client quotas, keeping the %d entities already loaded: %s", self._loaded, exc)
            return False
        self._on_snapshot(QuotaSnapshot({entity: record for entity, (record, _) in stored.items()}))
        if stored or self._loaded:
            log.info("client quotas loaded: %d entities", len(stored))
        self._loaded = len(stored)
        return True
