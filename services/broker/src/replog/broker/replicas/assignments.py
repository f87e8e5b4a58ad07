"""Which local replicas the cluster still assigns to this broker (seed v3 §E), read at start-up.

A replica directory whose topic is gone from /brokers/topics, or whose
partition no longer lists this broker (neither as a replica nor as one being
added by a reassignment), is left over from a deletion or reassignment that
completed while the broker was down: it is deleted before the broker
registers. Unreadable assignment data keeps the replica (deleting on a misread
would lose data); the controller's INIT LeaderAndIsr settles it later.
"""

from __future__ import annotations

import logging
from typing import Callable

from replog.common.core.partitions import TopicPartition
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


def assigned_here(zk: ZkClient, broker_id: int) -> Callable[[TopicPartition], bool]:
    """A predicate over local partitions, reading each topic's assignment once."""
    cache: dict[str, schema.TopicAssignment | None | bool] = {}

    def assignment(topic: str):
        if topic not in cache:
            found = zk.get(schema.topic_path(topic))
            if found is None:
                cache[topic] = None
            else:
                try:
                    cache[topic] = schema.TopicAssignment.decode(topic, found[0])
                except schema.ZkDataError as exc:
                    log.warning("keeping local replicas of %s: %s", topic, exc)
                    cache[topic] = True
        return cache[topic]

    def is_assigned(topic_partition: TopicPartition) -> bool:
        found = assignment(topic_partition.topic)
        if found is True:
            return True
        if found is None:
            return False
        replicas = found.partitions.get(topic_partition.partition, ())
        adding = found.adding_replicas.get(topic_partition.partition, ())
        return broker_id in replicas or broker_id in adding

    return is_assigned
