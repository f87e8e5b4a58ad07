"""Helpers for controller tests: read ZooKeeper as the truth, create topics as the gateway does."""

from __future__ import annotations

import time

from replog.common.zk import schema
from replog.common.zk.client import ZkClient


def create_topic(zk: ZkClient, topic: str, assignment: dict[int, tuple[int, ...]], config: dict | None = None) -> None:
    """Exactly the gateway's write: the topic's config and assignment in one transaction."""
    tx = zk.kazoo.transaction()
    config_path, topic_path = schema.topic_config_path(topic), schema.topic_path(topic)
    tx.create(config_path, schema.TopicConfigRecord(config or {}).encode(), acl=zk.acl(config_path))
    tx.create(topic_path, schema.TopicAssignment(assignment).encode(), acl=zk.acl(topic_path))
    results = tx.commit()
    assert not any(isinstance(r, Exception) for r in results), results


def states(zk: ZkClient, topic: str, partitions: int) -> dict[int, tuple[schema.PartitionStateRecord, int] | None]:
    out = {}
    for p in range(partitions):
        found = zk.get(schema.partition_state_path(topic, p))
        out[p] = (schema.PartitionStateRecord.decode(found[0]), found[1].version) if found else None
    return out


def controller(zk: ZkClient) -> tuple[int, int]:
    """(controller id or -1, controller epoch)."""
    found = zk.get(schema.CONTROLLER)
    epoch = zk.get(schema.CONTROLLER_EPOCH)
    return (schema.ControllerRecord.decode(found[0]).controller_id if found else -1,
            schema.decode_controller_epoch(epoch[0]) if epoch else 0)


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.1):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)
