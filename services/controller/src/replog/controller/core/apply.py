"""apply(state, plan) -> ControllerState: the next state, after the plan was persisted.

Theory of operation
-------------------
The executor calls this once the plan's ZooKeeper writes succeeded (KRaft's
``replay``).  It replays ``plan.state_updates`` (controller-only facts) and then
``plan.zk_writes`` onto a new state and returns it; the old state is untouched.
A ``LoadState`` update, first of a Startup plan, replaces the base.

Cost: copy on write.  Each top-level dict the plan touches is copied once; in
``partitions_by_broker`` only the brokers whose replicas change are copied.
Everything else is shared with the previous state, which is never changed
(docs/perf/controller-state-values.md).  A write whose
``expected_partition_epoch`` does not match the state is a broken invariant
(the executor would have failed the ``multi``) and asserts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replog.common.core.partitions import NO_LEADER, TopicPartition

from .model import ControllerState, ReplicaAssignment
from .plan import (
    ClearReassignment,
    CreatePartitionState,
    DeleteAdminRequest,
    DeleteTopicZnodes,
    LearnPartitions,
    LoadState,
    Plan,
    SetAssignment,
    SetDeletionPending,
    SetLastRebalanceCheck,
    SetLiveBrokers,
    SetPartitionState,
    SetReassignment,
    SetShuttingDown,
    SetTopicConfig,
)


def apply(state: ControllerState, plan: Plan) -> ControllerState:
    writes = plan.zk_writes
    if not plan.state_updates and not writes:
        return state
    updates = plan.state_updates
    if updates and isinstance(updates[0], LoadState):
        state = updates[0].state
        updates = updates[1:]
    draft = _Draft(state)
    for update in updates:
        draft.replay_update(update)
    for write in writes:
        draft.replay_write(write)
    return draft.finish()


class _Draft:
    """A state under construction: fields are shared until first changed."""

    _COPIED_FIELDS = ("live_brokers", "assignments", "partition_states", "topic_configs",
                      "topics_being_deleted", "reassignments", "partitions_by_broker",
                      "partitions_by_topic")

    def __init__(self, state: ControllerState) -> None:
        self.base = state
        self.changes: dict[str, Any] = {}
        self.own_brokers: set[int] = set()
        self.new_partitions: dict[str, list[int]] = {}
        self.offline = state.offline_partition_count

    def own(self, name: str) -> dict:
        """The field as a private dict, copied on first use."""
        value = self.changes.get(name)
        if value is None:
            value = dict(getattr(self.base, name))
            self.changes[name] = value
        return value

    def broker_index(self, broker_id: int) -> dict[TopicPartition, None]:
        index = self.own("partitions_by_broker")
        if broker_id not in self.own_brokers:
            self.own_brokers.add(broker_id)
            index[broker_id] = dict(index.get(broker_id, {}))
        return index[broker_id]

    # --- controller-only facts -------------------------------------------------

    def replay_update(self, update: object) -> None:
        if isinstance(update, SetLiveBrokers):
            self.changes["live_brokers"] = dict(update.live)
        elif isinstance(update, SetShuttingDown):
            self.changes["shutting_down_brokers"] = frozenset(update.broker_ids)
        elif isinstance(update, LearnPartitions):
            for partition, assignment in update.assignment.items():
                self.set_assignment(TopicPartition(update.topic, partition), assignment)
        elif isinstance(update, SetTopicConfig):
            self.own("topic_configs")[update.topic] = update.config
        elif isinstance(update, SetDeletionPending):
            self.own("topics_being_deleted")[update.topic] = update.pending
        elif isinstance(update, SetReassignment):
            reassignments = self.own("reassignments")
            if update.target is None:
                reassignments.pop(update.partition, None)
            else:
                reassignments[update.partition] = update.target
        elif isinstance(update, SetLastRebalanceCheck):
            self.changes["last_rebalance_check_ms"] = update.now_ms
        else:
            raise AssertionError(f"unknown state update {update!r}")

    # --- ZooKeeper writes ----------------------------------------------------------

    def replay_write(self, write: object) -> None:
        if isinstance(write, SetPartitionState):
            states = self.own("partition_states")
            current = states.get(write.partition)
            assert current is not None and current.partition_epoch == write.expected_partition_epoch, (
                f"{write.partition}: expected partition epoch {write.expected_partition_epoch}, "
                f"state has {current}")
            assert write.state.partition_epoch == write.expected_partition_epoch + 1
            self.offline += (write.state.leader == NO_LEADER) - (current.leader == NO_LEADER)
            states[write.partition] = write.state
        elif isinstance(write, CreatePartitionState):
            states = self.own("partition_states")
            assert write.partition not in states, f"{write.partition}: state exists already"
            self.offline += write.state.leader == NO_LEADER
            states[write.partition] = write.state
        elif isinstance(write, SetAssignment):
            for partition, assignment in write.assignment.items():
                self.set_assignment(TopicPartition(write.topic, partition), assignment)
        elif isinstance(write, DeleteTopicZnodes):
            self.delete_topic(write.topic)
        elif isinstance(write, (ClearReassignment, DeleteAdminRequest)):
            pass  # request znodes are not part of the state
        else:
            raise AssertionError(f"unknown ZooKeeper write {write!r}")

    def set_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        assignments = self.own("assignments")
        before = assignments.get(tp)
        if before == assignment:
            return
        assignments[tp] = assignment
        old = () if before is None else before.replicas
        for broker_id in old:
            if broker_id not in assignment.replicas:
                self.broker_index(broker_id).pop(tp, None)
        for broker_id in assignment.replicas:
            if broker_id not in old:
                self.broker_index(broker_id)[tp] = None
        if before is None:
            self.new_partitions.setdefault(tp.topic, []).append(tp.partition)

    def delete_topic(self, topic: str) -> None:
        self.merge_new_partitions()
        partitions = self.own("partitions_by_topic").pop(topic, ())
        assignments = self.own("assignments")
        states = self.own("partition_states")
        reassignments = self.own("reassignments")
        for partition in partitions:
            tp = TopicPartition(topic, partition)
            assignment = assignments.pop(tp)
            for broker_id in assignment.replicas:
                self.broker_index(broker_id).pop(tp, None)
            state = states.pop(tp, None)
            self.offline -= state is not None and state.leader == NO_LEADER
            reassignments.pop(tp, None)
        self.own("topic_configs").pop(topic, None)
        self.own("topics_being_deleted").pop(topic, None)

    def merge_new_partitions(self) -> None:
        if self.new_partitions:
            by_topic = self.own("partitions_by_topic")
            for topic, added in self.new_partitions.items():
                by_topic[topic] = tuple(sorted((*by_topic.get(topic, ()), *added)))
            self.new_partitions.clear()

    def finish(self) -> ControllerState:
        self.merge_new_partitions()
        self.changes["offline_partition_count"] = self.offline
        return replace(self.base, **self.changes)
