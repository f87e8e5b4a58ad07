"""Creates the offsets topic on the first FindCoordinator of a cluster that has none.

The topic is written where the gateway writes a topic it creates: its config znode and its
assignment znode under /brokers/topics, in one ZooKeeper transaction. The controller's watch on
/brokers/topics does the rest (partition states, LeaderAndIsr, UpdateMetadata), exactly as for any
topic, so this module never talks to the controller. Until the metadata names the topic's leaders,
FindCoordinator answers COORDINATOR_NOT_AVAILABLE and clients look again.

Several brokers may be asked at once: the transaction's create fails on all but one of them, which
is fine. One broker writes at most one attempt at a time; callers that arrive meanwhile are told to
retry instead of waiting on ZooKeeper.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Mapping

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError, RolledBackError

from replog.broker.groups.core.offsets_topic import plan_offsets_topic
from replog.common.core.errors import RequestError
from replog.common.core.internal_topics import OFFSETS_TOPIC
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.common.zk.schema import TopicAssignment, TopicConfigRecord

log = logging.getLogger(__name__)


class OffsetsTopicCreator:
    def __init__(self, zk: ZkClient, partitions: int, replication_factor: int, rng: random.Random, *,
                 segment_bytes: int | None = None) -> None:
        self._zk = zk
        self._segment_bytes = segment_bytes
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._rng = rng
        self._writing = threading.Lock()

    def ensure(self, live_racks: Mapping[int, str | None]) -> str:
        """Create the topic unless it exists or is on its way; say where things stand, for the caller's answer."""
        if not self._writing.acquire(blocking=False):
            return f"the offsets topic {OFFSETS_TOPIC} is being created; retry"
        try:
            return self._ensure(live_racks)
        except (KazooException, OSError) as error:
            log.warning("could not create %s (the next FindCoordinator tries again): %s", OFFSETS_TOPIC, error)
            return f"the offsets topic {OFFSETS_TOPIC} could not be created yet ({type(error).__name__}); retry"
        finally:
            self._writing.release()

    def _ensure(self, live_racks: Mapping[int, str | None]) -> str:
        topic_path = schema.topic_path(OFFSETS_TOPIC)
        if self._zk.get(schema.delete_topic_path(OFFSETS_TOPIC)) is not None:
            return f"the offsets topic {OFFSETS_TOPIC} is being deleted; it is created again once that completes"
        if self._zk.get(topic_path) is not None:
            return f"the offsets topic {OFFSETS_TOPIC} is being created; retry"
        try:
            plan = plan_offsets_topic(live_racks, self._partitions, self._replication_factor, self._rng,
                                      segment_bytes=self._segment_bytes)
        except RequestError as error:
            return f"the offsets topic {OFFSETS_TOPIC} cannot be placed: {error}"
        if plan is None:
            return f"the offsets topic {OFFSETS_TOPIC} cannot be created: no live broker is known yet; retry"
        if plan.capped:
            log.warning("creating %s with replication factor %d, not the configured %d: only %d broker(s) are live",
                        OFFSETS_TOPIC, plan.replication_factor, plan.replication_factor_asked, len(live_racks))
        config_path = schema.topic_config_path(OFFSETS_TOPIC)
        leftover = self._zk.get(config_path)  # a config left by an interrupted delete is replaced
        tx = self._zk.kazoo.transaction()
        config = TopicConfigRecord(plan.configs).encode()
        if leftover is None:
            tx.create(config_path, config, acl=self._zk.acl(config_path))
        else:
            tx.set_data(config_path, config, version=leftover[1].version)
        tx.create(topic_path, TopicAssignment(partitions=plan.assignment).encode(), acl=self._zk.acl(topic_path))
        failures = [r for r in tx.commit() if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        if failures and isinstance(failures[0], (NodeExistsError, NoNodeError)):
            return f"the offsets topic {OFFSETS_TOPIC} is being created; retry"  # another broker won the race
        if failures:
            raise failures[0]
        log.info("created %s: %d partitions, replication factor %d", OFFSETS_TOPIC, self._partitions,
                 plan.replication_factor)
        return f"the offsets topic {OFFSETS_TOPIC} is being created; retry"
