"""Writes a plan's ZooKeeper records in batched, epoch-fenced `multi`s.

Every transaction starts with a check of /controller_epoch's version (the seat
fence, KAFKA-6082): if another controller has taken the seat since, the whole
batch fails and nothing is written. Partition-state writes are also
conditional on the state znode's version (the partition epoch). Batches are
bounded in operations and bytes (ZooKeeper refuses requests over its
jute.maxbuffer, 1 MiB by default) and are pipelined as jute frames on the
writer's own session (replog.common.zk.multi_writer), cheaper than kazoo's
per-operation objects on the failover's critical path; ZooKeeper applies one
session's requests in order (docs/perf/zookeeper-multi-writes.md). The few reads a
write needs (which partition znodes exist, the reassignment request's version)
go through kazoo.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from replog.common.zk import bulk
from replog.common.zk import multi_writer as mw
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.controller.core import plan as p
from replog.controller.core.model import ReplicaAssignment

log = logging.getLogger(__name__)

BATCH_OPS_MAX = 1000
BATCH_BYTES_MAX = 512 * 1024


class SeatLostError(RuntimeError):
    """The /controller_epoch check failed: another controller holds the seat."""


class ZkWriteError(RuntimeError):
    """A write failed for another reason; the controller's cache may be stale."""


@dataclass(frozen=True)
class WriteStats:
    transactions: int
    operations: int
    bytes: int

    def __add__(self, other: "WriteStats") -> "WriteStats":
        return WriteStats(self.transactions + other.transactions, self.operations + other.operations,
                          self.bytes + other.bytes)


class ZkWriter:
    def __init__(self, zk: ZkClient, controller_id: int, controller_epoch: int, epoch_zk_version: int) -> None:
        self._zk = zk
        self._controller_id = controller_id
        self._controller_epoch = controller_epoch
        self._epoch_zk_version = epoch_zk_version
        self._multi = mw.MultiWriter(zk.endpoint, session_timeout_s=zk.session_timeout_ms / 1000)

    def close(self) -> None:
        """End the write session (a new seat gets a new writer)."""
        self._multi.close()

    # --- translating plan records to operations ----------------------------------------

    def _operations(self, writes: tuple) -> list[tuple[mw.Operation, int]]:
        """Each write as (operation, size) pairs, in order."""
        kazoo = self._zk.kazoo
        ops: list[tuple[mw.Operation, int]] = []
        # Per topic, the partition znodes there already: one read of the topic's partitions, not one
        # `exists` round trip per partition (docs/perf/partition-znode-reads.md).
        partition_nodes: dict[str, set[str]] = {}
        for write in writes:
            if isinstance(write, p.SetPartitionState):
                tp, state = write.partition, write.state
                data = self._state_bytes(state)
                ops.append((mw.SetData(schema.partition_state_path(tp.topic, tp.partition), data,
                                       write.expected_partition_epoch), len(data) + 80))
            elif isinstance(write, p.CreatePartitionState):
                tp = write.partition
                existing = partition_nodes.get(tp.topic)
                if existing is None:
                    try:
                        existing = set(kazoo.get_children(schema.partitions_path(tp.topic)))
                    except NoNodeError:
                        ops.append((self._create(schema.partitions_path(tp.topic)), 80))
                        existing = set()
                    partition_nodes[tp.topic] = existing
                data = self._state_bytes(write.state)
                if str(tp.partition) not in existing:
                    ops.append((self._create(schema.partition_path(tp.topic, tp.partition)), 80))
                    existing.add(str(tp.partition))
                ops.append((self._create(schema.partition_state_path(tp.topic, tp.partition), data), len(data) + 80))
            elif isinstance(write, p.SetAssignment):
                data = _assignment_bytes(write.assignment)
                ops.append((mw.SetData(schema.topic_path(write.topic), data), len(data) + 80))
            elif isinstance(write, p.DeleteTopicZnodes):
                ops.extend(self._delete_topic_ops(write))
            elif isinstance(write, p.ClearReassignment):
                ops.extend(self._clear_reassignment_ops(write))
            elif isinstance(write, p.DeleteAdminRequest):
                path = f"{schema.ADMIN}/{write.name}"
                if kazoo.exists(path) is not None:
                    ops.append((mw.Delete(path), 80))
            else:
                raise AssertionError(f"unknown ZooKeeper write {write!r}")
        return ops

    def _create(self, path: str, data: bytes = b"") -> mw.Create:
        return mw.Create(path, data, self._zk.endpoint.acl(path))

    def _state_bytes(self, state) -> bytes:
        return schema.PartitionStateRecord(state.leader, state.leader_epoch, tuple(state.isr),
                                           state.controller_epoch, state.unclean_leader_epoch,
                                           tuple(state.elr)).encode()

    def _delete_topic_ops(self, write: p.DeleteTopicZnodes) -> list[tuple[mw.Operation, int]]:
        kazoo = self._zk.kazoo
        ops: list[tuple[mw.Operation, int]] = []
        try:
            partitions = kazoo.get_children(schema.partitions_path(write.topic))
        except NoNodeError:
            partitions = []
        bases = [f"{schema.partitions_path(write.topic)}/{partition}"
                 for partition in sorted(partitions, key=lambda x: int(x) if x.isdigit() else -1)]
        # Each partition's children in one pipelined read (one get_children each cost a round trip).
        for base, children in zip(bases, bulk.children_many(self._zk.endpoint, bases) if bases else []):
            for child in children or ():
                ops.append((mw.Delete(f"{base}/{child}"), 80))
            ops.append((mw.Delete(base), 80))
        if partitions:
            ops.append((mw.Delete(schema.partitions_path(write.topic)), 80))
        for path in (schema.topic_path(write.topic), schema.topic_config_path(write.topic),
                     schema.delete_topic_path(write.topic)):
            if kazoo.exists(path) is not None:
                ops.append((mw.Delete(path), 80))
        return ops

    def _clear_reassignment_ops(self, write: p.ClearReassignment) -> list[tuple[mw.Operation, int]]:
        try:
            data, stat = self._zk.kazoo.get(schema.REASSIGN_PARTITIONS)
        except NoNodeError:
            return []
        request = schema.ReassignmentRequest.decode(data)
        cleared = {(tp.topic, tp.partition) for tp in write.partitions}
        remaining = {k: v for k, v in request.targets.items() if k not in cleared}
        if not remaining:
            return [(mw.Delete(schema.REASSIGN_PARTITIONS, stat.version), 80)]
        encoded = schema.ReassignmentRequest(remaining).encode()
        return [(mw.SetData(schema.REASSIGN_PARTITIONS, encoded, stat.version), len(encoded) + 80)]

    # --- committing ------------------------------------------------------------------------

    def write(self, writes: tuple) -> WriteStats:
        if not writes:
            return WriteStats(0, 0, 0)
        ops = self._operations(writes)
        if not ops:
            return WriteStats(0, 0, 0)
        fence = mw.Check(schema.CONTROLLER_EPOCH, self._epoch_zk_version)
        batches: list[list[mw.Operation]] = [[fence]]
        size = total = 0
        for op, op_size in ops:
            if len(batches[-1]) > BATCH_OPS_MAX or size + op_size > BATCH_BYTES_MAX:
                batches.append([fence])
                size = 0
            batches[-1].append(op)
            size += op_size
            total += op_size
        try:
            outcomes = self._multi.commit(batches)
        except mw.MultiWriteError as exc:
            raise ZkWriteError(f"ZooKeeper writes in doubt: {exc}") from None
        failures = []
        for batch, outcome in zip(batches, outcomes):
            if outcome[0] in (mw.ERR_BAD_VERSION, mw.ERR_NO_NODE):
                raise SeatLostError("the /controller_epoch check failed: another controller took the seat")
            for op, code in zip(batch[1:], outcome[1:]):
                if code not in (mw.OK, mw.ERR_RUNTIME_INCONSISTENCY):
                    failures.append(f"{type(op).__name__} {op.path}: {mw.error_name(code)}")
        if failures:
            raise ZkWriteError(f"{len(failures)} ZooKeeper write(s) failed, first: {failures[0]}")
        return WriteStats(len(batches), len(ops), total)


def _assignment_bytes(assignment: dict[int, ReplicaAssignment]) -> bytes:
    return schema.TopicAssignment(
        partitions={partition: tuple(a.replicas) for partition, a in assignment.items()},
        adding_replicas={partition: tuple(a.adding) for partition, a in assignment.items() if a.adding},
        removing_replicas={partition: tuple(a.removing) for partition, a in assignment.items() if a.removing},
    ).encode()
