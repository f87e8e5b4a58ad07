"""The client quotas in ZooKeeper: read them, and keep a snapshot current with them.

Every broker runs one `QuotaWatcher`: every quota write sets the change marker `/config/quotas`
(zk/schema/client_quotas.py) in the transaction that changes the quotas (and creates it with the
first quota of a cluster), and a MarkerWatcher (zk/marker_watcher.py) re-reads the folder on each
change and hands a new `QuotaSnapshot` over. A read that fails (ZooKeeper unreachable, a znode it
cannot decode) keeps the snapshot it had, logs, and is tried again after a pause: a quota is never
dropped because its znode could not be read.

The first read happens in `start`, before the broker answers clients; until a read succeeds the
snapshot is empty (no quota).
"""

from __future__ import annotations

import logging
from typing import Callable

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from replog.common.quotas.core.model import QuotaSnapshot, principal_problem, record_problem
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.common.zk.marker_watcher import MarkerWatcher

log = logging.getLogger(__name__)

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
        self._marker = MarkerWatcher(zk, schema.QUOTAS, self._load, name="quota-watcher")

    def start(self) -> None:
        self._marker.start()

    def stop(self) -> None:
        self._marker.stop()

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
