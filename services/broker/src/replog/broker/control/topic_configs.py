"""Per-topic settings the broker enforces, watched in /config/topics/<topic>.

Every key a topic may set takes effect here: `min.insync.replicas` (acks=-1
needs that many ISR members, read by produce; a leader's HW does not move while
its ISR is smaller, and `on_min_insync_replicas` tells the running leaders of a
change), `message.timestamp.type` (with
LogAppendTime the leader stamps each batch with its own clock;
replog.common.records.batch says how), `compression.type` (other than
`producer`, the leader compresses each batch with the topic's codec unless it
already uses it; replog.common.records.compression), and the log's keys (`retention.*`,
`segment.*`, `max.message.bytes`, `flush.*`), laid over the broker's defaults
into one `LogConfig` per topic (log/config.py). `flush.messages=1` is the
durable mode: every replica, leader and followers, fsyncs each appended batch
before its position counts toward the HW (docs/durability.md).

A kazoo DataWatch per hosted topic keeps them current; when a topic's
`LogConfig` changes, `on_log_config` hands it to every running replica of the
topic at once (no restart). A topic without its own value uses the broker
default, and without its own timestamp type is CreateTime. Watches start when
the broker first hosts a replica of the topic and stop when it hosts none.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from kazoo.recipe.watchers import DataWatch

from replog.broker.log import LogConfig
from replog.common.core.errors import InvalidConfigError
from replog.common.core.topic_config import (
    COMPRESSION_PRODUCER,
    COMPRESSION_TYPE,
    COMPRESSION_TYPES,
    COMPRESSION_UNCOMPRESSED,
    MESSAGE_TIMESTAMP_TYPE,
    MIN_INSYNC_REPLICAS,
)
from replog.common.records import COMPRESSION_NONE, TimestampType, codec_of
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


class TopicConfigs:
    def __init__(self, zk: ZkClient, *, default_min_insync_replicas: int, default_log_config: LogConfig | None = None,
                 on_log_config: Callable[[str, LogConfig], None] = lambda topic, config: None,
                 on_min_insync_replicas: Callable[[str, int], None] = lambda topic, value: None,
                 fsync_each_append_always: bool = False) -> None:
        self._zk = zk
        self._default = default_min_insync_replicas
        self._default_log_config = LogConfig() if default_log_config is None else default_log_config
        self._on_log_config = on_log_config
        self._on_min_insync = on_min_insync_replicas
        self._fsync_always = fsync_each_append_always  # the broker's `fsync_acks_all`: every topic is durable
        self._lock = threading.Lock()
        self._min_insync: dict[str, int] = {}
        self._log_configs: dict[str, LogConfig] = {}
        self._log_append_time: set[str] = set()
        self._codecs: dict[str, int] = {}  # topic -> the codec its leader stores batches with (not `producer`)
        self._watched: set[str] = set()

    def min_insync_replicas(self, topic: str) -> int:
        return self._min_insync.get(topic, self._default)

    def log_append_time(self, topic: str) -> bool:
        """Whether the topic's batches take the leader's time (message.timestamp.type=LogAppendTime)."""
        return topic in self._log_append_time

    def compression(self, topic: str) -> int | None:
        """The codec the topic's leader stores batches with, or None: each batch as its producer sent it."""
        return self._codecs.get(topic)

    def fsync_each_append(self, topic: str) -> bool:
        """The topic is in the durable mode (`flush.messages=1`, or the broker's `fsync_acks_all`)."""
        return self._fsync_always or self.log_config(topic).flush_messages == 1

    def log_config(self, topic: str) -> LogConfig:
        """The topic's log settings: the broker's defaults with the topic's overrides."""
        return self._log_configs.get(topic, self._default_log_config)

    @property
    def default_log_config(self) -> LogConfig:
        return self._default_log_config

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
            overrides = self._overrides(topic, data)
            self._set_min_insync(topic, self._parse_min_insync(topic, overrides))
            if self._parse_log_append_time(topic, overrides):
                self._log_append_time.add(topic)
            else:
                self._log_append_time.discard(topic)
            codec = self._parse_compression(topic, overrides)
            if codec is None:
                self._codecs.pop(topic, None)
            else:
                self._codecs[topic] = codec
            self._set_log_config(topic, self._parse_log_config(topic, overrides))
            return True

        DataWatch(self._zk.kazoo, schema.topic_config_path(topic), on_change)

    def unwatch(self, topic: str) -> None:
        with self._lock:
            self._watched.discard(topic)
            self._forget(topic)

    def _forget(self, topic: str) -> None:
        self._min_insync.pop(topic, None)
        self._log_configs.pop(topic, None)
        self._log_append_time.discard(topic)
        self._codecs.pop(topic, None)

    def _set_min_insync(self, topic: str, value: int) -> None:
        before = self.min_insync_replicas(topic)
        self._min_insync[topic] = value  # before the call: a leadership starting meanwhile reads it (state_changes.py)
        if value != before:
            log.info("topic %s: min.insync.replicas now %d", topic, value)
            self._on_min_insync(topic, value)

    def _set_log_config(self, topic: str, config: LogConfig) -> None:
        if config == self.log_config(topic):
            return  # the usual case at start-up: no overrides, nothing to hand out
        self._log_configs[topic] = config
        log.info("topic %s: log settings now %s", topic, config)
        self._on_log_config(topic, config)

    def _overrides(self, topic: str, data: bytes | None) -> dict[str, str]:
        if not data:
            return {}
        try:
            return dict(schema.TopicConfigRecord.decode(topic, data).config)
        except schema.ZkDataError as exc:
            log.warning("topic %s: ignoring an unreadable config: %s", topic, exc)
            return {}

    def _parse_min_insync(self, topic: str, overrides: dict[str, str]) -> int:
        value = overrides.get(MIN_INSYNC_REPLICAS)
        try:
            return self._default if value is None else max(1, int(value))
        except ValueError as exc:
            log.warning("topic %s: ignoring unreadable %s: %s", topic, MIN_INSYNC_REPLICAS, exc)
            return self._default

    @staticmethod
    def _parse_log_append_time(topic: str, overrides: dict[str, str]) -> bool:
        value = overrides.get(MESSAGE_TIMESTAMP_TYPE, TimestampType.CREATE_TIME.value)
        if value not in (TimestampType.CREATE_TIME.value, TimestampType.LOG_APPEND_TIME.value):
            log.warning("topic %s: ignoring unreadable %s %r", topic, MESSAGE_TIMESTAMP_TYPE, value)
        return value == TimestampType.LOG_APPEND_TIME.value

    @staticmethod
    def _parse_compression(topic: str, overrides: dict[str, str]) -> int | None:
        value = overrides.get(COMPRESSION_TYPE, COMPRESSION_PRODUCER)
        if value not in COMPRESSION_TYPES:
            log.warning("topic %s: ignoring unreadable %s %r", topic, COMPRESSION_TYPE, value)
            return None
        if value == COMPRESSION_PRODUCER:
            return None
        return COMPRESSION_NONE if value == COMPRESSION_UNCOMPRESSED else codec_of(value)

    def _parse_log_config(self, topic: str, overrides: dict[str, str]) -> LogConfig:
        try:
            return self._default_log_config.with_topic_overrides(overrides)
        except (InvalidConfigError, ValueError) as exc:  # the gateway validates; an older writer may not have
            log.warning("topic %s: ignoring its log settings, keeping the broker's defaults: %s", topic, exc)
            return self._default_log_config
