"""ZooKeeper watches of the active controller: each reads what changed and
enqueues one event; none decides anything.

Watches are registered when the controller takes its seat and stop themselves
(by returning False to kazoo) once `close()` is called, so a resigned
controller's watches go quiet.

The seat's snapshot is read after `start()` returns, and its Startup is decided
before any queued event. A broker list read before that is therefore older than
the snapshot, and applied after it would undo it: a broker that registered in
between would look dead, lose its leaderships, and then come back (a spurious
leader-epoch bump that clients see as NOT_LEADER). So broker lists whose firing
began before `start()` returned are not enqueued; the snapshot covers them.
Other watches' first firings are harmless (their handlers are idempotent).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from replog.common.core.partitions import TopicPartition
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.controller.adapters import registrations
from replog.controller.adapters.loader import read_reassignment_request
from replog.controller.core import events as ev
from replog.controller.core.model import BrokerInfo, TopicElectionConfig

log = logging.getLogger(__name__)

Enqueue = Callable[..., bool]


class Watches:
    def __init__(self, zk: ZkClient, enqueue: Enqueue, known_topics: frozenset[str] = frozenset()) -> None:
        """`known_topics`: topics the coming Startup snapshot holds anyway (a standby's copy); the
        first firing does not read their assignments again (docs/perf/takeover-known-topics.md)."""
        self._zk = zk
        self._enqueue = enqueue
        self._closed = threading.Event()
        self._topics: set[str] = set(known_topics)
        self._config_topics: set[str] = set()
        self._lock = threading.Lock()
        self._started = False  # set when start() returns: firings before then are covered by the snapshot

    def close(self) -> None:
        self._closed.set()

    def start(self) -> None:
        kazoo = self._zk.kazoo
        ChildrenWatch(kazoo, schema.BROKER_IDS, self._brokers_changed)
        ChildrenWatch(kazoo, schema.TOPICS, self._topics_changed)
        ChildrenWatch(kazoo, schema.DELETE_TOPICS, self._deletions_changed)
        ChildrenWatch(kazoo, schema.CONFIG_TOPICS, self._configs_changed)
        DataWatch(kazoo, schema.REASSIGN_PARTITIONS, self._reassignment_changed)
        DataWatch(kazoo, schema.PREFERRED_REPLICA_ELECTION, self._election_changed(preferred=True))
        DataWatch(kazoo, schema.UNCLEAN_LEADER_ELECTION, self._election_changed(preferred=False))
        self._started = True

    # Each callback returns False to remove its watch once closed.

    def _brokers_changed(self, children: list[str]) -> bool:
        if self._closed.is_set():
            return False
        if not self._started:
            return True  # older than the snapshot the seat reads next (see the module doc)
        notice_ms = int(time.time() * 1000)
        live: dict[int, BrokerInfo] = {}
        credentials = self._zk.endpoint.credentials
        for child in children:
            if not child.isdigit():
                continue
            path = schema.broker_path(int(child))
            try:
                entries = registrations.read_acl(self._zk.kazoo, path) if credentials else None
                if not registrations.believed(int(child), entries, credentials):
                    continue
                data, stat = self._zk.kazoo.get(path)
            except (NoNodeError, NoAuthError):
                continue  # gone, or made by someone who kept the controller out (and logged above)
            registration = schema.BrokerRegistration.decode(int(child), data)
            live[int(child)] = registrations.broker_info(registration, stat.czxid)
        self._enqueue(ev.BrokersChanged(live), notice_ms=notice_ms)
        return True

    def _topics_changed(self, children: list[str]) -> bool:
        if self._closed.is_set():
            return False
        with self._lock:
            new = sorted(set(children) - self._topics)
            self._topics = set(children)
        assignments, configs = {}, {}
        for topic in new:
            try:
                data, _ = self._zk.kazoo.get(schema.topic_path(topic))
            except NoNodeError:
                continue
            record = schema.TopicAssignment.decode(topic, data)
            assignments[topic] = {p: tuple(r) for p, r in record.partitions.items()}
            configs[topic] = self._read_config(topic)
        if assignments:
            self._enqueue(ev.TopicsCreated(assignments, {t: c for t, c in configs.items() if c is not None}))
        # Only now: a DataWatch fires at once, and its PartitionsAdded must come after TopicsCreated,
        # or the topic starts without its config (unclean.leader.election.enable was lost that way).
        for topic in assignments:
            DataWatch(self._zk.kazoo, schema.topic_path(topic), self._topic_data_changed(topic))
        return True

    def _topic_data_changed(self, topic: str):
        def callback(data, stat, event=None) -> bool:
            if self._closed.is_set() or data is None:
                return False
            record = schema.TopicAssignment.decode(topic, data)
            self._enqueue(ev.PartitionsAdded(topic, {p: tuple(r) for p, r in record.partitions.items()}))
            return True

        return callback

    def _deletions_changed(self, children: list[str]) -> bool:
        if self._closed.is_set():
            return False
        if children:
            self._enqueue(ev.TopicDeletionRequested(tuple(sorted(children))))
        return True

    def _read_config(self, topic: str) -> TopicElectionConfig | None:
        try:
            data, _ = self._zk.kazoo.get(schema.topic_config_path(topic))
        except NoNodeError:
            return None
        try:
            return TopicElectionConfig.from_map(schema.TopicConfigRecord.decode(topic, data).config)
        except Exception as exc:  # noqa: BLE001 - keep the controller running on a bad config
            log.error("ignoring invalid config of topic %s: %s", topic, exc)
            return None

    def _configs_changed(self, children: list[str]) -> bool:
        if self._closed.is_set():
            return False
        with self._lock:
            new = sorted(set(children) - self._config_topics)
            self._config_topics = set(children)
        for topic in new:
            DataWatch(self._zk.kazoo, schema.topic_config_path(topic), self._config_data_changed(topic))
        return True

    def _config_data_changed(self, topic: str):
        first = [True]

        def callback(data, stat, event=None) -> bool:
            if self._closed.is_set() or data is None:
                return False
            if first[0]:  # the initial firing: the config is already known from the snapshot / TopicsCreated
                first[0] = False
                return True
            config = self._read_config(topic)
            if config is not None:
                self._enqueue(ev.TopicConfigChanged(topic, config))
            return True

        return callback

    def _reassignment_changed(self, data, stat, event=None) -> bool:
        if self._closed.is_set():
            return False
        if data:
            try:
                targets = read_reassignment_request(data)
            except schema.ZkDataError as exc:
                log.error("ignoring unreadable reassignment request: %s", exc)
                return True
            if targets:
                self._enqueue(ev.ReassignmentRequested(targets))
        return True

    def _election_changed(self, preferred: bool):
        name = (schema.PREFERRED_REPLICA_ELECTION if preferred else schema.UNCLEAN_LEADER_ELECTION).rsplit("/", 1)[1]

        def callback(data, stat, event=None) -> bool:
            if self._closed.is_set():
                return False
            if not data:
                return True
            try:
                request = schema.ElectionRequest.decode(data)
            except schema.ZkDataError as exc:
                log.error("ignoring unreadable election request: %s", exc)
                return True
            partitions = tuple(TopicPartition(t, p) for t, p in request.partitions)
            if preferred:
                self._enqueue(ev.PreferredElectionRequested(partitions or None, admin_request=name))
            else:
                self._enqueue(ev.UncleanElectionRequested(partitions, admin_request=name))
            return True

        return callback
