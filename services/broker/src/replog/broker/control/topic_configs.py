"""Per-topic settings the broker enforces, watched in /config/topics/<topic>.

Today that is `min.insync.replicas` (acks=-1 needs that many ISR members).
A kazoo DataWatch per hosted topic keeps the value current; a topic without
its own value uses the broker default. Watches start when the broker first
hosts a replica of the topic and stop when it hosts none.
"""

from __future__ import annotations

import logging
import threading

from kazoo.recipe.watchers import DataWatch

from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)

MIN_INSYNC_REPLICAS = "min.insync.replicas"


class TopicConfigs:
    def __init__(self, zk: ZkClient, *, default_min_insync_replicas: int) -> None:
        self._zk = zk
        self._default = default_min_insync_replicas
        self._lock = threading.Lock()
        self._min_insync: dict[str, int] = {}
        self._watched: set[str] = set()

    def min_insync_replicas(self, topic: str) -> int:
        return self._min_insync.get(topic, self._default)

    def watch(self, topic: str) -> None:
        """Start watching `topic` (idempotent); the first value is read before returning."""
        with self._lock:
            if topic in self._watched:
                return
            self._watched.add(topic)

        def on_change(data, stat) -> bool:
            with self._lock:
                if topic not in self._watched:
                    self._min_insync.pop(topic, None)
                    return False  # stops the watch
            self._min_insync[topic] = self._parse(topic, data)
            return True

        DataWatch(self._zk.kazoo, schema.topic_config_path(topic), on_change)

    def unwatch(self, topic: str) -> None:
        with self._lock:
            self._watched.discard(topic)
            self._min_insync.pop(topic, None)

    def _parse(self, topic: str, data: bytes | None) -> int:
        if not data:
            return self._default
        try:
            value = schema.TopicConfigRecord.decode(topic, data).config.get(MIN_INSYNC_REPLICAS)
            return self._default if value is None else max(1, int(value))
        except (schema.ZkDataError, ValueError) as exc:
            log.warning("topic %s: ignoring unreadable %s: %s", topic, MIN_INSYNC_REPLICAS, exc)
            return self._default
