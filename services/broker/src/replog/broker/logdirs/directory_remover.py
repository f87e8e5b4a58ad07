"""Removes deleted replicas' directories on a thread of its own, off the request path.

A StopReplica that deletes replicas only renames each directory aside
(partition_dirs.set_aside_directory) and hands it here, so removing the files
holds neither the request nor the state-change lock (docs/perf/replica-deletion.md).
One thread removes them in order; a
failure is logged and the directory left for the next start, which hands every
set-aside directory here again.
"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
from pathlib import Path

log = logging.getLogger(__name__)


class DirectoryRemover:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def remove_later(self, directory: Path) -> None:
        self._queue.put(directory)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="directory-remover", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            directory = self._queue.get()
            try:
                shutil.rmtree(directory)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.error("cannot remove %s (left for the next start): %s", directory, exc)
