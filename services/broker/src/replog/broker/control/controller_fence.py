"""The broker's controller fence: the highest controller epoch it obeys, raised only on ZooKeeper's word.

The rule is `core/controller_epoch.py`; this adapter holds the fence and asks ZooKeeper when
the rule needs it. A request at the fence's epoch (nearly every one) is judged without a lock
or a read. A request above it is judged under a lock, one at a time, each after a fresh read
of `/controller_epoch` (a `sync` first, so a lagging ZooKeeper server cannot answer with an
epoch older than the one the new controller wrote before it sent anything). A flood of
requests with made-up epochs thus costs ZooKeeper one read at a time from this broker, and
never delays the real controller's requests, which take the lock-free path.

When ZooKeeper cannot be read, `EpochUnconfirmed` is raised: the servicer answers UNAVAILABLE,
which the controller treats as a request lost in transit and sends the broker's state again
shortly (a typed refusal would be final for it).
"""

from __future__ import annotations

import threading
from typing import Callable

from kazoo.exceptions import KazooException

from replog.broker.core import controller_epoch
from replog.broker.core.errors import Refusal
from replog.common.zk import schema
from replog.common.zk.client import ZkClient


class EpochUnconfirmed(Exception):
    """ZooKeeper could not be asked which controller epoch is current."""


def zookeeper_controller_epoch(zk: ZkClient) -> Callable[[], int]:
    """A reader of `/controller_epoch` (synced first); -1 while no controller was ever seated."""

    def read() -> int:
        try:
            zk.kazoo.sync(schema.CONTROLLER_EPOCH)
            found = zk.get(schema.CONTROLLER_EPOCH)
            return controller_epoch.NO_CONTROLLER_EPOCH if found is None else schema.decode_controller_epoch(found[0])
        except (KazooException, schema.ZkDataError) as exc:
            raise EpochUnconfirmed(f"cannot read {schema.CONTROLLER_EPOCH} from ZooKeeper: {exc!r}") from None

    return read


class ControllerFence:
    """The highest confirmed controller epoch; `admit` judges each controller request against it."""

    def __init__(self, read_confirmed: Callable[[], int]) -> None:
        self._read_confirmed = read_confirmed
        self._lock = threading.Lock()
        self._fence = controller_epoch.NO_CONTROLLER_EPOCH

    @property
    def epoch(self) -> int:
        return self._fence

    def admit(self, request_epoch: int) -> Refusal | None:
        """None to obey the request; raises `EpochUnconfirmed` when ZooKeeper cannot be asked."""
        fence = self._fence  # an int read once: it only goes up, and each path re-checks under the lock
        if not controller_epoch.needs_confirmation(request_epoch, fence):
            return controller_epoch.judge(request_epoch, fence).refusal
        with self._lock:
            fence = self._fence
            if not controller_epoch.needs_confirmation(request_epoch, fence):
                return controller_epoch.judge(request_epoch, fence).refusal  # another request confirmed it
            verdict = controller_epoch.judge(request_epoch, fence, self._read_confirmed())
            assert verdict.fence >= fence, (verdict, fence)
            self._fence = verdict.fence
            return verdict.refusal
