"""Per-topic settings the broker enforces, watched in /config/topics/<topic>.

Today that is `min.insync.replicas` (acks=-1 needs that many ISR members),
`message.timestamp.type` (with LogAppendTime the leader stamps each batch with its
own clock; replog.common.records.batch says how) and `flush.messages=1`, the durable
mode: every replica, leader and followers, fsyncs each appended batch before its
position counts toward the HW (docs/durability.md). Other `flush.messages` values are
carried but not acted on here. A kazoo DataWatch per hosted topic keeps the values
current; a topic without its own min.insync.replicas uses the broker default, and
without its own timestamp type is CreateTime. Watches start when the broker first
hosts a replica of the topic and stop when it hosts none.
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
FLUSH_MESSAGES = "flush.messages"


class TopicConfigs:
    def __init__(self, zk: ZkClient, *, default_min_insync_replicas: int,
                 fsync_each_append_always: bool = False) -> None:
        self._zk = zk
        self._default = default_min_insync_replicas
        self._fsync_always = fsync_each_append_always  # the broker's `fsync_acks_all`: every topic is durable
        self._lock = threading.Lock()
        self._min_insync: dict[str, int] = {}
        self._log_append_time: set[str] = set()
        self._fsync_each_append: frozenset[str] = frozenset()  # replaced, never changed: read without the lock
        self._watched: set[str] = set()

    def min_insync_replicas(self, topic: str) -> int:
        return self._min_insync.get(topic, self._default)

    def log_append_time(self, topic: str) -> bool:
        """Whether the topic's batches take the leader's time (message.timestamp.type=LogAppendTime)."""
        return topic in self._log_append_time

    def fsync_each_append(self, topic: str) -> bool:
        """The topic asks for the durable mode (`flush.messages=1`)."""
        return self._fsync_always or topic in self._fsync_each_append

    def watch(self, topic: str) -> None:
        """Start watching `topic` (idempotent); the first value is read before returning."""
        with self._lock:
            if topic in self._watched:
                return
            self._watched.add(topic)

        def on_change(data, stat) -> bool:
            with self._lock:
                if topic not in self._watched:
                    self._forget(topic)
                    return False  # stops the watch
                config = self._config(topic, data)
                self._min_insync[topic] = self._parse(topic, config)
                self._set_durable(topic, self._durable(topic, config))
                if self._parse_log_append_time(topic, config):
                    self._log_append_time.add(topic)
                else:
                    self._log_append_time.discard(topic)
            return True

        DataWatch(self._zk.kazoo, schema.topic_config_path(topic), on_change)

    def unwatch(self, topic: str) -> None:
        with self._lock:
            self._watched.discard(topic)
            self._forget(topic)

    def _forget(self, topic: str) -> None:
        self._min_insync.pop(topic, None)
        self._log_append_time.discard(topic)
        self._set_durable(topic, False)

    def _set_durable(self, topic: str, durable: bool) -> None:
        if durable != (topic in self._fsync_each_append):
            self._fsync_each_append = (self._fsync_each_append | {topic}) if durable else (
                self._fsync_each_append - {topic})

    @staticmethod
    def _config(topic: str, data: bytes | None) -> dict[str, str]:
        if not data:
            return {}
        try:
            return dict(schema.TopicConfigRecord.decode(topic, data).config)
        except schema.ZkDataError as exc:
            log.warning("topic %s: ignoring an unreadable config: %s", topic, exc)
            return {}

    def _parse(self, topic: str, config: dict[str, str]) -> int:
        value = config.get(MIN_INSYNC_REPLICAS)
        try:
            return self._default if value is None else max(1, int(value))
        except ValueError as exc:
            log.warning("topic %s: ignoring unreadable %s: %s", topic, MIN_INSYNC_REPLICAS, exc)
            return self._default

    @staticmethod
    def _parse_log_append_time(topic: str, config: dict[str, str]) -> bool:
        value = config.get(MESSAGE_TIMESTAMP_TYPE, TimestampType.CREATE_TIME.value)
        if value not in (TimestampType.CREATE_TIME.value, TimestampType.LOG_APPEND_TIME.value):
            log.warning("topic %s: ignoring unreadable %s %r", topic, MESSAGE_TIMESTAMP_TYPE, value)
        return value == TimestampType.LOG_APPEND_TIME.value

    @staticmethod
    def _durable(topic: str, config: dict[str, str]) -> bool:
        value = config.get(FLUSH_MESSAGES)
        try:
            return value is not None and int(value) == 1
        except ValueError as exc:
            log.warning("topic %s: ignoring unreadable %s: %s", topic, FLUSH_MESSAGES, exc)
            return False
