"""Topic decisions: create, grow, configure, delete, describe.

Theory of operation
-------------------
Each ``plan_*`` function takes the snapshot and the request's domain values and
returns what to write (records from ``replog.common.zk.schema``) or raises a
:class:`~.refusal.Refusal`. Nothing is written by a refused request, because
nothing is written here at all; the adapter writes a whole decision in one
version-checked ZooKeeper transaction.

Placement, assignment validation and config parsing are the controller core's
(``placement``, ``topic_config``); their errors carry Kafka's messages and are
mapped to statuses here: a malformed request is INVALID_ARGUMENT, a request the
cluster's current state cannot satisfy (too few live brokers, a dead broker,
racks on some brokers only) is FAILED_PRECONDITION.

Limits: a topic's assignment and config must fit one ZooKeeper request (1 MiB
``jute.maxbuffer``), and a topic has at most ``PARTITIONS_PER_TOPIC_MAX``
partitions, checked before placement so a huge count costs nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields
from typing import Iterable, Iterator, Mapping, Sequence

from replog.common.core import placement
from replog.common.core.errors import BrokerNotAvailableError, InvalidConfigError, InvalidRequestError, RequestError
from replog.common.core.topic_config import MIN_INSYNC_REPLICAS, TopicConfig
from replog.common.error_codes import ErrorCode
from replog.common.zk.schema import BrokerRegistration, TopicAssignment, TopicConfigRecord

from .health import Filter, PartitionHealth, partition_health
from .model import ClusterView, TopicView
from .names import check_topic_name, collision_key
from .refusal import Refusal, already_exists, invalid, not_found, precondition

PARTITIONS_PER_TOPIC_MAX = 50_000
# ZooKeeper refuses a request above jute.maxbuffer (1 MiB - 1); keep room for paths and headers.
ZK_REQUEST_BYTES_MAX = 1_000_000

AssignmentEntry = tuple[str, int, tuple[int, ...]]   # (topic or "", partition, replicas)


@dataclass(frozen=True)
class CreateTopic:
    name: str
    partitions: int = 0
    replication_factor: int = 0
    assignment: tuple[AssignmentEntry, ...] = ()
    configs: Mapping[str, str] = field(default_factory=dict)
    start_index: int | None = None
    replica_shift: int | None = None


@dataclass(frozen=True)
class TopicCreation:
    name: str
    assignment: TopicAssignment
    config: TopicConfigRecord            # the overrides, as stored
    effective_configs: dict[str, str]


@dataclass(frozen=True)
class PartitionGrowth:
    name: str
    assignment: TopicAssignment          # the whole new assignment to store
    added: dict[int, tuple[int, ...]]


@dataclass(frozen=True)
class ConfigChange:
    name: str
    config: TopicConfigRecord
    effective_configs: dict[str, str]


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    health: PartitionHealth
    min_insync_replicas: int


@dataclass(frozen=True)
class TopicDescription:
    name: str
    configs: dict[str, str]
    deleting: bool
    partitions: list[PartitionDescription]


# --- create ---------------------------------------------------------------------

def plan_create_topic(view: ClusterView, request: CreateTopic, rng: random.Random) -> TopicCreation:
    name = request.name
    check_topic_name(name)
    if name in view.topic_names:
        raise already_exists(f"Topic '{name}' already exists.", ErrorCode.TOPIC_ALREADY_EXISTS)
    if name in view.deleting_topics:
        raise precondition(f"Topic '{name}' is being deleted; create it again once the deletion completes.",
                           ErrorCode.TOPIC_ALREADY_EXISTS)
    colliding = sorted(t for t in view.topic_names if collision_key(t) == collision_key(name))
    if colliding:
        raise precondition(
            f"Topic '{name}' collides with existing topic '{colliding[0]}': "
            "names that differ only by '.' and '_' are not allowed together.", ErrorCode.INVALID_TOPIC
        )
    overrides = dict(request.configs)
    effective = _parse_configs(overrides)
    if request.assignment:
        assignment = _explicit_assignment(view, name, request.assignment, first_partition=0)
    else:
        assignment = _placed_assignment(view, request, rng)
    record = TopicAssignment(partitions=assignment)
    config = TopicConfigRecord(overrides)
    _check_request_size(name, record, config)
    return TopicCreation(name, record, config, effective.to_map())


def _placed_assignment(view: ClusterView, request: CreateTopic, rng: random.Random) -> dict[int, tuple[int, ...]]:
    if request.partitions <= 0:
        raise invalid(f"Number of partitions must be larger than 0, got {request.partitions}.", ErrorCode.INVALID_PARTITIONS)
    _check_partition_count(request.partitions)
    if request.replication_factor <= 0:
        raise invalid(f"Replication factor must be larger than 0, got {request.replication_factor}.",
                      ErrorCode.INVALID_REPLICATION_FACTOR)
    _check_live_brokers(view, request.replication_factor)
    for what, value in (("start index", request.start_index), ("replica shift", request.replica_shift)):
        if value is not None and value < 0:
            raise invalid(f"The placement {what} must be 0 or more, got {value}.")
    try:
        return placement.assign_replicas_to_brokers(
            view.racks(), request.partitions, request.replication_factor, rng,
            start_index=request.start_index, replica_shift=request.replica_shift,
        )
    except InvalidRequestError as exc:      # racks on some brokers only: the cluster's state
        raise precondition(str(exc)) from None
    except RequestError as exc:
        raise _refusal(exc) from None


def _explicit_assignment(
    view: ClusterView, name: str, entries: Sequence[AssignmentEntry], first_partition: int
) -> dict[int, tuple[int, ...]]:
    _check_partition_count(first_partition + len(entries))
    by_partition: dict[int, tuple[int, ...]] = {}
    for topic, partition, replicas in entries:
        if topic and topic != name:
            raise invalid(f"The assignment entry for partition {partition} names topic '{topic}', not '{name}'.",
                          ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        if partition in by_partition:
            raise invalid(f"Partition {partition} is listed twice in the replica assignment.",
                          ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        by_partition[partition] = tuple(replicas)
    try:
        return placement.validate_replica_assignment(
            by_partition, view.live_broker_ids, first_partition=first_partition,
            expected_replication_factor=None if first_partition == 0 else _replication_factor(view, name),
        )
    except BrokerNotAvailableError as exc:
        named = {b for replicas in by_partition.values() for b in replicas}
        unknown = named - view.known_broker_ids()
        raise (invalid if unknown else precondition)(str(exc), ErrorCode.INVALID_REPLICA_ASSIGNMENT) from None
    except RequestError as exc:
        raise _refusal(exc) from None


def _replication_factor(view: ClusterView, name: str) -> int:
    # Kafka takes a grown topic's replication factor from partition 0.
    partitions = view.topics[name].assignment.partitions
    return len(partitions[0] if 0 in partitions else partitions[min(partitions)])


def _check_partition_count(count: int) -> None:
    if count > PARTITIONS_PER_TOPIC_MAX:
        raise invalid(f"Partition count {count} is more than the {PARTITIONS_PER_TOPIC_MAX} a topic may have.",
                      ErrorCode.INVALID_PARTITIONS)


def _check_request_size(name: str, assignment: TopicAssignment, config: TopicConfigRecord | None) -> None:
    size = len(assignment.encode()) + (len(config.encode()) if config else 0)
    if size > ZK_REQUEST_BYTES_MAX:
        raise invalid(
            f"Topic '{name}': its assignment takes {size} bytes, more than the {ZK_REQUEST_BYTES_MAX} "
            "one ZooKeeper request may carry; use fewer partitions or replicas."
        )


def _parse_configs(overrides: Mapping[str, str]) -> TopicConfig:
    try:
        return TopicConfig.from_map(overrides)
    except InvalidConfigError as exc:
        raise invalid(str(exc), ErrorCode.INVALID_CONFIG) from None


def _refusal(exc: RequestError) -> Refusal:
    # Cluster-state failures (too few live brokers, mixed racks) are checked or
    # caught before this; what reaches here is a malformed request.
    return invalid(str(exc), exc.code)


def _check_live_brokers(view: ClusterView, replication_factor: int) -> None:
    live = len(view.brokers)
    if replication_factor > live:
        raise precondition(f"Replication factor: {replication_factor} larger than available brokers: {live}.",
                           ErrorCode.INVALID_REPLICATION_FACTOR)


# --- grow ---------------------------------------------------------------------------

def plan_add_partitions(
    view: ClusterView, name: str, total_count: int, explicit: Sequence[AssignmentEntry]
) -> PartitionGrowth:
    topic = _existing_topic(view, name)
    current = topic.partition_count
    if total_count <= current:
        raise invalid(
            f"The number of partitions for a topic can only be increased. Topic '{name}' currently has "
            f"{current} partitions, {total_count} would not be an increase."
        )
    _check_partition_count(total_count)
    _refuse_if_reassigning(view, topic)
    if explicit:
        if len(explicit) != total_count - current:
            raise invalid(
                f"The assignment names {len(explicit)} new partitions, but growing topic '{name}' "
                f"from {current} to {total_count} adds {total_count - current}."
            )
        added = _explicit_assignment(view, name, explicit, first_partition=current)
    else:
        _check_live_brokers(view, _replication_factor(view, name))
        try:
            added = placement.assign_new_partitions(name, topic.assignment.partitions, total_count, view.racks())
        except InvalidRequestError as exc:
            raise precondition(str(exc)) from None
        except RequestError as exc:
            raise _refusal(exc) from None
    grown = TopicAssignment(
        partitions={**topic.assignment.partitions, **added},
        adding_replicas=topic.assignment.adding_replicas,
        removing_replicas=topic.assignment.removing_replicas,
    )
    _check_request_size(name, grown, None)
    return PartitionGrowth(name, grown, added)


def _refuse_if_reassigning(view: ClusterView, topic: TopicView) -> None:
    moving = sorted(p for p in topic.assignment.partitions if topic.reassigning(p))
    if view.reassignment is not None:
        moving += sorted(p for (t, p), target in view.reassignment.targets.items() if t == topic.name and target)
    if moving:
        raise precondition(
            f"Topic '{topic.name}' has a reassignment in progress (partition {moving[0]}); "
            "wait for it to complete or cancel it first."
        )


# --- configure -----------------------------------------------------------------------------

def known_config_keys() -> frozenset[str]:
    # to_map() leaves out settings whose value is "the broker's default" (None);
    # give those a value so every key the config owner knows shows up.
    every = TopicConfig(**{f.name: 1 for f in fields(TopicConfig) if f.default is None})
    return frozenset(every.to_map())


def plan_alter_configs(
    view: ClusterView, name: str, to_set: Mapping[str, str], to_delete: Iterable[str]
) -> ConfigChange:
    topic = _existing_topic(view, name)
    to_delete = list(dict.fromkeys(to_delete))
    if not to_set and not to_delete:
        raise invalid(f"Nothing to change for topic '{name}': give configs to set or to delete.")
    both = sorted(set(to_set) & set(to_delete))
    if both:
        raise invalid(f"Config '{both[0]}' is both set and deleted in one request.")
    unknown = sorted(set(to_delete) - known_config_keys())
    if unknown:
        raise invalid(f"Unknown topic config '{unknown[0]}'; known configs: {', '.join(sorted(known_config_keys()))}.")
    overrides = {k: v for k, v in topic.config_overrides.items() if k not in to_delete}
    overrides.update(to_set)
    effective = _parse_configs(overrides)
    return ConfigChange(name, TopicConfigRecord(overrides), effective.to_map())


# --- delete ------------------------------------------------------------------------------------

def check_delete(view: ClusterView, name: str) -> None:
    check_topic_name(name)
    if name not in view.topic_names:
        raise not_found(f"Topic '{name}' does not exist.", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if name in view.deleting_topics:
        raise precondition(f"Topic '{name}' is already being deleted.", ErrorCode.TOPIC_DELETION_IN_PROGRESS)


def _existing_topic(view: ClusterView, name: str) -> TopicView:
    check_topic_name(name)
    topic = view.topic(name)
    if topic is None:
        raise not_found(f"Topic '{name}' does not exist.")
    if topic.deleting:
        raise precondition(f"Topic '{name}' is being deleted.")
    return topic


# --- describe ----------------------------------------------------------------------------------

def describe_topics(view: ClusterView, names: Sequence[str], wanted: Filter) -> list[TopicDescription]:
    """Topics in name order; when filtering, only matching partitions, and topics with none are left out."""
    missing = sorted(set(names) - set(view.topics))
    if missing:
        raise not_found(f"Unknown topic{'s' if len(missing) > 1 else ''}: {', '.join(repr(n) for n in missing)}.")
    chosen = sorted(set(names)) if names else sorted(view.topics)
    described = []
    for name in chosen:
        topic = view.topics[name]
        partitions = [d for d in describe_partitions(topic, view.brokers) if d.health.matches(wanted)]
        if wanted is not Filter.NONE and not partitions:
            continue
        described.append(TopicDescription(name, topic.config().to_map(), topic.deleting, partitions))
    return described


def describe_partitions(topic: TopicView, brokers: Mapping[int, BrokerRegistration]) -> Iterator[PartitionDescription]:
    """Each partition's health against the min.insync.replicas its leader enforces: the topic's own, else
    the leader's broker default from its registration (the lowest live one while nothing leads)."""
    own = MIN_INSYNC_REPLICAS in topic.config_overrides
    topic_min_isr = topic.config().min_insync_replicas
    lowest_default = min((b.min_insync_replicas_default for b in brokers.values()), default=1)
    live = frozenset(brokers)
    assignment = topic.assignment
    for partition in sorted(assignment.partitions):
        replicas = assignment.partitions[partition]
        adding = assignment.adding_replicas.get(partition, ())
        state = topic.states.get(partition)
        leader = brokers.get(state.leader) if state else None
        min_isr = topic_min_isr if own else leader.min_insync_replicas_default if leader else lowest_default
        health = partition_health(replicas, adding, state, live, min_isr)
        yield PartitionDescription(
            topic.name, partition, replicas, adding, assignment.removing_replicas.get(partition, ()),
            health, min_isr,
        )
