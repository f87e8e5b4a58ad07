"""The ACL bindings in ZooKeeper: read the subtree, and keep an Authorizer current with it.

Brokers and gateways each run one `AclWatcher`: every ACL write sets the change marker `/acls`
(zk/schema/acl_bindings.py) in the transaction that changes the bindings, and a MarkerWatcher
(zk/marker_watcher.py) re-reads the whole subtree on each change and hands the bindings to the
Authorizer as a new snapshot. A read that fails (ZooKeeper unreachable, a znode it cannot decode)
keeps the snapshot it had, logs, and is tried again after a pause: a deny is never dropped because
its znode could not be read.

The first read happens in `start`, before the service answers requests; until a read succeeds
the snapshot is empty, which allows nobody but the super users.
"""

from __future__ import annotations

import logging
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.core.model import AclBinding, binding_problem
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.common.zk.marker_watcher import MarkerWatcher

log = logging.getLogger(__name__)

Resource = tuple[str, str, str]


def read_acls(kazoo) -> dict[Resource, tuple[frozenset[AclBinding], int]]:
    """Every resource pattern's bindings with its znode version. Raises ZkDataError for a znode that
    does not hold valid bindings, and kazoo's errors when ZooKeeper cannot answer."""
    folders = []
    for resource_type in _children(kazoo, schema.ACLS):
        for pattern_type in _children(kazoo, f"{schema.ACLS}/{resource_type}"):
            folders.append((resource_type, pattern_type))
    resources = [(rt, pt, name) for rt, pt in folders for name in _children(kazoo, schema.acl_pattern_folder(rt, pt))]
    pending = [kazoo.get_async(schema.acl_resource_path(*resource)) for resource in resources]
    stored: dict[Resource, tuple[frozenset[AclBinding], int]] = {}
    for resource, result in zip(resources, pending):
        try:
            data, stat = result.get()
        except NoNodeError:
            continue  # deleted with its last binding since the listing
        stored[resource] = (_bindings(resource, data), stat.version)
    return stored


def _children(kazoo, path: str) -> list[str]:
    try:
        return sorted(kazoo.get_children(path))
    except NoNodeError:
        return []


def _bindings(resource: Resource, data: bytes) -> frozenset[AclBinding]:
    path = schema.acl_resource_path(*resource)
    record = schema.AclResourceRecord.decode(data, path)
    bindings = frozenset(AclBinding(e.principal, *resource, e.operation, e.permission) for e in record.entries)
    for binding in bindings:
        problem = binding_problem(binding)
        if problem:
            raise schema.ZkDataError(f"{path}: {problem}")
    return bindings


class AclWatcher:
    """Keeps `authorizer` holding the bindings ZooKeeper holds (see the module's docstring)."""

    def __init__(self, zk: ZkClient, authorizer: Authorizer) -> None:
        self._zk = zk
        self._authorizer = authorizer
        self._marker = MarkerWatcher(zk, schema.ACLS, self._load, name="acl-watcher")

    def start(self) -> None:
        self._marker.start()

    def stop(self) -> None:
        self._marker.stop()

    def _load(self) -> bool:
        try:
            stored = read_acls(self._zk.kazoo)
        except (schema.ZkDataError, KazooException, KazooTimeoutError, OSError) as exc:
            log.error("cannot read the ACL bindings, keeping the %d already loaded: %s",
                      len(self._authorizer.bindings), exc)
            return False
        bindings = [b for bindings, _ in stored.values() for b in bindings]
        self._authorizer.replace(bindings)
        log.info("ACL bindings loaded: %d in %d resource patterns", len(bindings), len(stored))
        return True
