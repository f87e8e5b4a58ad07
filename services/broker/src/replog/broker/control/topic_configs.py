"""Per-topic settings the broker enforces, watched in /config/topics/<topic>.

Today that is `min.insync.replicas` (acks=-1 needs that many ISR members) and
`message.timestamp.type` (with LogAppendTime the leader stamps each batch with its
own clock; replog.common.records.batch says how). A kazoo DataWatch per hosted
topic keeps the values current; a topic without its own min.insync.replicas uses
the broker default, and without its own timestamp type is CreateTime. Watches
start when the broker first hosts a replica of the topic and stop when it hosts none.
"""

from __future__ import annotations

import logging
import threading

from kazoo.recipe.watchers import DataWatch

from replog.common.core.topic_config import MESSAGE_TIMESTAMP_TYPE
from replog.common.records import TimestampType
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
        self._log_append_time: set[str] = set()
        self._watched: set[str] = set()

    def min_insync_replicas(self, topic: str) -> int:
        return self._min_insync.get(topic, self._default)

    def log_append_time(self, topic: str) -> bool:
        """Whether the topic's batches take the leader's time (message.timestamp.type=LogAppendTime)."""
        return topic in self._log_append_time

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
                    self._log_append_time.discard(topic)
                    return False  # stops the watch
            configs = self._read(topic, data)
            self._min_insync[topic] = self._parse(topic, configs)
            if self._parse_log_append_time(topic, configs):
                self._log_append_time.add(topic)
            else:
                self._log_append_time.discard(topic)
            return True

        DataWatch(self._zk.kazoo, schema.topic_config_path(topic), on_change)

    def unwatch(self, topic: str) -> None:
        with self._lock:
            self._watched.discard(topic)
            self._min_insync.pop(topic, None)
            self._log_append_time.discard(topic)

    @staticmethod
    def _read(topic: str, data: bytes | None) -> dict[str, str]:
        if not data:
            return {}
        try:
            return dict(schema.TopicConfigRecord.decode(topic, data).config)
        except schema.ZkDataError as exc:
            log.warning("topic %s: ignoring unreadable topic configs: %s", topic, exc)
            return {}

    def _parse(self, topic: str, configs: dict[str, str]) -> int:
        value = configs.get(MIN_INSYNC_REPLICAS)
        try:
            return self._default if value is None else max(1, int(value))
        except ValueError as exc:
            log.warning("topic %s: ignoring unreadable %s: %s", topic, MIN_INSYNC_REPLICAS, exc)
            return self._default

    @staticmethod
    def _parse_log_append_time(topic: str, configs: dict[str, str]) -> bool:
        value = configs.get(MESSAGE_TIMESTAMP_TYPE, TimestampType.CREATE_TIME.value)
        if value not in (TimestampType.CREATE_TIME.value, TimestampType.LOG_APPEND_TIME.value):
            log.warning("topic %s: ignoring unreadable %s %r", topic, MESSAGE_TIMESTAMP_TYPE, value)
        return value == TimestampType.LOG_APPEND_TIME.value
