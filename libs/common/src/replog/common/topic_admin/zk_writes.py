"""Version-checked ZooKeeper writes for admin decisions.

Every decision is written in one kazoo transaction (ZooKeeper ``multi``): all of
it or none of it. Sets carry the version the decision was taken on; creates
fail if the znode appeared meanwhile. A failed check means another writer won
the race: the handler re-reads and decides again (:func:`retrying`), and after
a few tries answers ABORTED rather than loop.

Writes are never retried blindly on connection loss (replog.common.zk.client):
a transaction whose outcome is unknown is reported, not repeated.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from kazoo.exceptions import RolledBackError

from replog.common.topic_admin.core.model import NO_ZNODE
from replog.common.topic_admin.core.refusal import aborted

T = TypeVar("T")
ATTEMPTS_MAX = 4


class Conflict(Exception):
    """A version check failed: another writer changed the znode first."""


def commit(transaction) -> None:
    """Commit; raise the first operation's failure (kazoo returns them as values)."""
    for result in transaction.commit():
        if isinstance(result, Exception) and not isinstance(result, RolledBackError):
            raise result


def create_or_set(transaction, path: str, data: bytes, version: int, acl: list) -> None:
    """Create `path` with `acl` (its schema ACL) when the decision saw no znode, else set it at `version`."""
    if version == NO_ZNODE:
        transaction.create(path, data, acl=acl)
    else:
        transaction.set_data(path, data, version=version)


def retrying(attempt: Callable[[], T], what: str) -> T:
    for _ in range(ATTEMPTS_MAX):
        try:
            return attempt()
        except Conflict:
            continue
    raise aborted(f"{what}: ZooKeeper kept changing under the request ({ATTEMPTS_MAX} tries); retry it.")
