"""A standby's copy of the cluster state, so taking the seat does not start with
reading every partition (docs/architecture.md, "Who holds the seat"; KRaft's standbys replay the
metadata log for the same reason).

Theory of operation
-------------------
While this controller is a standby, a `ChangeFeed` (persistent recursive
watches on ``/brokers/topics`` and ``/config/topics``) marks every znode that
changes as dirty; the mirror's thread loads everything once, then every
`REFRESH_INTERVAL_S` re-reads the dirty znodes (batched MultiReads, synced sessions) and
keeps them decoded: topic assignments, partition states, topic configs.

`take()`, on winning the seat, first waits for the feed's barrier -- after it,
every change committed before the seat was won is marked dirty -- then reads
what is dirty and returns a `ClusterSnapshot` equal to what `load_snapshot`
would read now. Live brokers, topics being deleted and reassignment requests
are small and always read afresh. A znode that changes after a re-read is
dirty again, so nothing read is older than its last notification.

When the feed may have missed changes (it moved to another ZooKeeper server,
or broke: its session expired) the mirror starts over with a full load -- on the
same feed if it still runs, else on a new one -- and `take()` answers None until
that load is done -- the caller then loads everything
itself, as a controller without a mirror does. The mirror is for standbys
only: the active controller closes it, and starts a fresh one when it resigns.
"""

from __future__ import annotations

import logging
import threading
import time

from replog.common.core.partitions import TopicPartition
from replog.common.zk import bulk, schema
from replog.common.zk.auth import ZkEndpoint
from replog.common.zk.change_feed import ChangeFeed
from replog.controller.adapters.loader import (
    read_assignments,
    read_cluster_rest,
    read_partition_states,
    read_topic_configs,
)
from replog.controller.core.model import ClusterSnapshot, LeaderAndIsr, ReplicaAssignment, TopicElectionConfig

log = logging.getLogger(__name__)

REFRESH_INTERVAL_S = 1.0
RETRY_INTERVAL_S = 2.0
TAKE_WAIT_S = 120.0  # a load in progress finishes sooner than a new one would


class StandbyMirror:
    def __init__(self, connect: ZkEndpoint, *, session_timeout_s: float = 10.0) -> None:
        self._connect = connect
        self._session_timeout_s = session_timeout_s
        self._lock = threading.Lock()  # guards the copy; held while refreshing or taking
        self._dirty: set[str] = set()
        self._dirty_lock = threading.Lock()
        self._lost = True  # no complete copy: load everything
        self._missed = 0  # how many times the feed said it may have missed changes
        self._attempted = threading.Event()  # a load finished, well or not
        self._stopped = threading.Event()
        self._feed: ChangeFeed | None = None
        self._assignments: dict[str, dict[int, ReplicaAssignment]] = {}
        self._states: dict[TopicPartition, LeaderAndIsr] = {}
        self._configs: dict[str, TopicElectionConfig] = {}
        self._thread = threading.Thread(target=self._run, name="standby-mirror", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stopped.set()
        self._attempted.set()  # wake a take() waiting for a load
        if self._feed is not None:
            self._feed.close()

    # --- the seat ------------------------------------------------------------------------

    def topics(self) -> frozenset[str]:
        """The topics in the copy now (empty without a complete copy)."""
        with self._lock:
            return frozenset() if self._lost else frozenset(self._assignments)

    def take(self, controller_id: int, controller_epoch: int) -> ClusterSnapshot | None:
        """The state as of now, from the copy; None when there is no complete copy."""
        started = time.monotonic()
        if not self._attempted.wait(TAKE_WAIT_S) or self._stopped.is_set():
            return None
        with self._lock:
            feed = self._feed
            if self._lost or feed is None:
                return None
            try:
                feed.barrier()
                brokers, deleting, reassignments = read_cluster_rest(self._connect)
                dirty = self._refresh()
            except Exception as exc:  # noqa: BLE001 - the caller loads everything instead
                log.warning("standby copy unusable at take-over (%s); loading everything", exc)
                self._lost = True
                return None
            if self._lost:
                return None
            assignments = {TopicPartition(t, p): a for t, partitions in self._assignments.items()
                           for p, a in partitions.items()}
            snapshot = ClusterSnapshot(
                controller_id=controller_id,
                controller_epoch=controller_epoch,
                live_brokers=brokers,
                assignments=assignments,
                partition_states={tp: s for tp, s in self._states.items() if tp in assignments},
                topic_configs=dict(self._configs),
                topics_being_deleted=deleting,
                reassignment_requests=reassignments,
            )
        log.info("took the standby copy: %d brokers, %d topics, %d partitions (%d znodes re-read) in %.2f s",
                 len(brokers), len(self._assignments), len(assignments), dirty, time.monotonic() - started)
        return snapshot

    # --- the mirror's thread -------------------------------------------------------------

    def _on_change(self, path: str | None) -> None:
        if path is None:
            self._missed += 1
            self._lost = True  # notifications may have been missed
            return
        with self._dirty_lock:
            self._dirty.add(path)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                if self._lost:
                    try:
                        self._load()
                    finally:
                        self._attempted.set()
                elif self._stopped.wait(REFRESH_INTERVAL_S):
                    break
                else:
                    with self._lock:
                        self._refresh()
            except Exception as exc:  # noqa: BLE001 - never trust a partial copy: load it again
                log.warning("standby copy of the cluster state lost (%s); loading it again", exc)
                self._lost = True
                self._stopped.wait(RETRY_INTERVAL_S)

    def _load(self) -> None:
        started = time.monotonic()
        with self._lock:
            with self._dirty_lock:
                self._dirty.clear()
            missed = self._missed
            self._lost = True  # until the load below completes
            # The feed first: a change after this point is dirty, one before it is in the load.
            if self._feed is None or self._feed.broken:
                if self._feed is not None:
                    self._feed.close()
                self._feed = ChangeFeed(self._connect, [schema.TOPICS, schema.CONFIG_TOPICS], self._on_change,
                                        session_timeout_s=self._session_timeout_s)
                self._feed.open()
                missed = self._missed
            topics = sorted(bulk.children_many(self._connect, [schema.TOPICS])[0] or [])
            self._assignments = {t: a for t, a in read_assignments(self._connect, topics).items() if a is not None}
            keys = [TopicPartition(t, p) for t, partitions in self._assignments.items() for p in partitions]
            self._states = {tp: s for tp, s in read_partition_states(self._connect, keys).items() if s is not None}
            self._configs = read_topic_configs(self._connect, topics)
            # A feed that broke or moved meanwhile may have missed changes.
            self._lost = self._feed.broken or self._missed != missed
        log.info("standby copy loaded: %d topics, %d partitions in %.2f s", len(self._assignments), len(keys),
                 time.monotonic() - started)

    def _refresh(self) -> int:
        """Re-read every dirty znode into the copy (the caller holds `_lock`); returns how many."""
        with self._dirty_lock:
            dirty, self._dirty = self._dirty, set()
        if not dirty:
            return 0
        assignment_topics, config_topics, state_keys = set(), set(), set()
        for path in dirty:
            named = schema.parse_topic_path(path)
            if named is None:
                continue
            kind, topic, partition = named
            if kind == "assignment":
                assignment_topics.add(topic)
            elif kind == "config":
                config_topics.add(topic)
            else:
                state_keys.add(TopicPartition(topic, partition))
        for topic, partitions in read_assignments(self._connect, sorted(assignment_topics)).items():
            if partitions is None:
                self._assignments.pop(topic, None)
                continue
            known = self._assignments.get(topic, {})
            state_keys.update(TopicPartition(topic, p) for p in partitions if p not in known)
            self._assignments[topic] = partitions
        for tp, state in read_partition_states(self._connect, sorted(state_keys)).items():
            if state is None:
                self._states.pop(tp, None)
            else:
                self._states[tp] = state
        if config_topics:
            found = read_topic_configs(self._connect, sorted(config_topics))
            for topic in config_topics:
                if topic in found:
                    self._configs[topic] = found[topic]
                else:
                    self._configs.pop(topic, None)
        return len(dirty)
