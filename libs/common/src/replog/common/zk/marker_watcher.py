"""Re-reads a ZooKeeper subtree each time its change marker is set.

A subtree that many writers change (the ACL bindings, the client quotas) has one marker znode that
every write sets in the transaction that changes the subtree, so one kazoo DataWatch on the marker
sees every change. The watch only wakes this watcher's thread, which calls `load` to re-read the
whole subtree; a change made while it reads fires the watch again, so the loop reads once more. A
`load` that fails returns False: it is tried again after a pause, and the caller keeps what it had.
The first `load` runs in `start`, before the service answers requests.
"""

from __future__ import annotations

import threading
from typing import Callable

from kazoo.recipe.watchers import DataWatch

from replog.common.zk.client import ZkClient

RETRY_PAUSE_S = 1.0
STOP_WAIT_S = 5.0


class MarkerWatcher:
    def __init__(self, zk: ZkClient, marker: str, load: Callable[[], bool], *, name: str) -> None:
        self._zk = zk
        self._marker = marker
        self._load = load
        self._name = name
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._load()
        DataWatch(self._zk.kazoo, self._marker, self._on_marker)
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
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
