"""Replica placement: Kafka's ``AdminUtils.assignReplicasToBrokers``, exactly.

Theory of operation
-------------------
Given the brokers (id -> rack or ``None``), a partition count and a
replication factor, produce ``{partition: (broker, ...)}`` with the first broker
of each tuple the preferred leader.  The output is the same as Kafka's for the
same broker list, start index and replica shift; only the random source differs
(a seeded ``random.Random`` draws the start index, then the shift, each in
``range(len(brokers))`` -- Kafka draws them in the same order from ``java.util.Random``).

Rack-unaware (every rack ``None``): brokers sorted by id, as Kafka's callers
(``AdminZkClient.getBrokerMetadatas``) pass them.  The first replica of
partition ``p`` is broker ``(p + start) % n``, round robin.  The others follow
at an offset from it given by :func:`replica_index`; the offset depends on a
*shift* that grows by one every ``n`` partitions, so consecutive rounds do not
repeat the same follower sequences.  Because the offset is ``1 + (...) % (n - 1)``
it is never 0 or ``n``: no partition gets the same broker twice -- the fix for
the seed's ``(i + j + k) mod n`` formula.

Rack-aware (every broker has a rack): the same walk over the *rack-alternated*
broker list (racks sorted by name, brokers sorted within each rack, one broker
per rack in turn), with the shift multiplied by the rack count, and a skip rule:
a candidate is passed over while its rack already holds a replica of the
partition and some rack holds none, or while it already holds a replica and
some broker holds none.  So a partition spans ``min(racks, RF)`` racks (the
seed's open issue 3).  Mixed rack information is refused.

Guarantees (pinned by property tests): no broker twice in a partition; leaders
differ by at most one between brokers for any partition count; when the
partition count is a multiple of the broker count, every broker leads exactly
``partitions / brokers`` partitions and, rack-unaware, holds exactly
``partitions * RF / brokers`` replicas.

Also here: placing added partitions (Kafka's ``createNewPartitionsAssignment``,
which continues from partition 0's first replica) and validating an explicit
assignment, with Kafka's error messages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from .errors import (
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
)

if TYPE_CHECKING:
    import random

Assignment = dict[int, tuple[int, ...]]


def replica_index(
    first_replica_index: int, second_replica_shift: int, replica_index: int, broker_count: int
) -> int:
    """Index of a follower: never the first replica's index, for any shift."""
    shift = 1 + (second_replica_shift + replica_index) % (broker_count - 1)
    return (first_replica_index + shift) % broker_count


def assign_replicas_to_brokers(
    brokers: Mapping[int, str | None],
    partition_count: int,
    replication_factor: int,
    rng: random.Random | None = None,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    start_partition_id: int = 0,
) -> Assignment:
    """Place ``partition_count`` partitions numbered from ``start_partition_id``.

    ``start_index`` / ``replica_shift`` of ``None`` are drawn from ``rng``; as in
    Kafka, a fixed start index with no shift given also fixes the shift to it.
    """
    if partition_count <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}."
        )
    for name, value in (("start index", start_index), ("replica shift", replica_shift)):
        if value is not None and value < 0:
            raise InvalidRequestError(f"The {name} must be 0 or more, got {value}.")
    without_rack = sorted(b for b, rack in brokers.items() if rack is None)
    if without_rack and len(without_rack) < len(brokers):
        raise InvalidRequestError(
            "Not all brokers have rack information for replica rack aware assignment "
            f"(brokers without a rack: {', '.join(map(str, without_rack))})."
        )
    rack_aware = not without_rack
    broker_list = rack_alternated_broker_list(brokers) if rack_aware else tuple(sorted(brokers))
    start, shift = _start_and_shift(len(broker_list), rng, start_index, replica_shift)
    if rack_aware:
        racks = {b: r for b, r in brokers.items() if r is not None}
        return _rack_aware(racks, broker_list, partition_count, replication_factor,
                           start, shift, start_partition_id)
    return _rack_unaware(broker_list, partition_count, replication_factor,
                         start, shift, start_partition_id)


def _start_and_shift(
    broker_count: int, rng: random.Random | None, start_index: int | None, replica_shift: int | None
) -> tuple[int, int]:
    if start_index is not None:
        return start_index, start_index if replica_shift is None else replica_shift
    if rng is None:
        raise ValueError("a random source is required when the start index is not fixed")
    start = rng.randrange(broker_count)
    shift = rng.randrange(broker_count) if replica_shift is None else replica_shift
    return start, shift


def _rack_unaware(
    broker_list: Sequence[int], partition_count: int, replication_factor: int,
    start: int, shift: int, start_partition_id: int,
) -> Assignment:
    n = len(broker_list)
    result: Assignment = {}
    partition = max(0, start_partition_id)
    for _ in range(partition_count):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        followers = [broker_list[replica_index(first, shift, j, n)]
                     for j in range(replication_factor - 1)]
        result[partition] = (broker_list[first], *followers)
        partition += 1
    return result


def _rack_aware(
    racks: Mapping[int, str], broker_list: Sequence[int], partition_count: int,
    replication_factor: int, start: int, shift: int, start_partition_id: int,
) -> Assignment:
    n = len(broker_list)
    rack_count = len(set(racks.values()))
    result: Assignment = {}
    partition = max(0, start_partition_id)
    for _ in range(partition_count):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = broker_list[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0  # one candidate counter for the whole partition, as in Kafka
        for _ in range(replication_factor - 1):
            while True:
                broker = broker_list[replica_index(first, shift * rack_count, k, n)]
                rack = racks[broker]
                k += 1
                rack_ok = rack not in racks_used or len(racks_used) == rack_count
                broker_ok = broker not in brokers_used or len(brokers_used) == n
                if rack_ok and broker_ok:
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        result[partition] = tuple(replicas)
        partition += 1
    return result


def rack_alternated_broker_list(racks: Mapping[int, str | None]) -> tuple[int, ...]:
    """Brokers taking one from each rack in turn: racks by name, ids ascending.

    rack1: 0, 1, 2 / rack2: 3, 4, 5 / rack3: 6, 7, 8 gives 0, 3, 6, 1, 4, 7, 2, 5, 8.
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in racks.items():
        by_rack.setdefault(str(rack), []).append(broker_id)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    depth = max((len(c) for c in columns), default=0)
    return tuple(c[i] for i in range(depth) for c in columns if i < len(c))


def assign_new_partitions(
    topic: str,
    existing: Mapping[int, Sequence[int]],
    new_total: int,
    brokers: Mapping[int, str | None],
    explicit: Mapping[int, Sequence[int]] | None = None,
) -> Assignment:
    """Assignment of partitions ``len(existing) .. new_total - 1`` of a grown topic.

    Without an explicit assignment the placement continues deterministically
    from partition 0's preferred broker, as Kafka does: the start index is the
    position (in the id-sorted broker list) of the first broker whose id is at
    least that broker's, and the shift equals the start index.
    """
    if 0 not in existing:
        raise InvalidReplicaAssignmentError(
            f"Unexpected existing replica assignment for topic '{topic}', "
            "partition id 0 is missing."
        )
    partitions_to_add = new_total - len(existing)
    if partitions_to_add <= 0:
        raise InvalidPartitionsError(
            "The number of partitions for a topic can only be increased. "
            f"Topic {topic} currently has {len(existing)} partitions, "
            f"{new_total} would not be an increase."
        )
    replication_factor = len(existing[0])
    if explicit is not None:
        return validate_replica_assignment(
            explicit, brokers.keys(), first_partition=len(existing),
            expected_replication_factor=replication_factor,
        )
    sorted_ids = sorted(brokers)
    preferred = existing[0][0]
    start = next((i for i, b in enumerate(sorted_ids) if b >= preferred), 0)
    # Kafka computes the start from the id-sorted list even when the rack-aware
    # walk then indexes the rack-alternated list; we keep that for identical output.
    return assign_replicas_to_brokers(
        brokers, partitions_to_add, replication_factor,
        start_index=start, start_partition_id=len(existing),
    )


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    broker_ids: Collection[int],
    *,
    first_partition: int = 0,
    expected_replication_factor: int | None = None,
) -> Assignment:
    """Check an explicit assignment and return it normalised (sorted, tuples).

    Refuses an empty replica list, a broker twice in one partition, an unknown
    broker, replication factors that differ (from partition ``first_partition``'s
    or the expected one), and partition ids that are not exactly
    ``first_partition .. first_partition + len(assignment) - 1``.
    """
    if not assignment:
        raise InvalidReplicaAssignmentError("The replica assignment names no partitions.")
    available = set(broker_ids)
    normalised = {p: tuple(assignment[p]) for p in sorted(assignment)}
    for partition, replicas in normalised.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {partition}."
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                "Duplicate brokers not allowed in replica assignment: "
                f"{_join(replicas)} for partition id {partition}."
            )
        if not available.issuperset(replicas):
            raise BrokerNotAvailableError(
                f"Some brokers specified for partition id {partition} are not available. "
                f"Specified brokers: {_join(replicas)}, available brokers: {_join(sorted(available))}."
            )
    expected = {first_partition + i for i in range(len(normalised))}
    if set(normalised) != expected:
        missing = sorted(expected - set(normalised))
        unexpected = sorted(set(normalised) - expected)
        raise InvalidReplicaAssignmentError(
            f"Partition ids must run from {first_partition} to "
            f"{first_partition + len(normalised) - 1} with none missing; "
            f"missing [{_join(missing)}], unexpected [{_join(unexpected)}]."
        )
    reference = (
        expected_replication_factor
        if expected_replication_factor is not None
        else len(normalised[first_partition])
    )
    bad = [(p, len(r)) for p, r in normalised.items() if len(r) != reference]
    if bad:
        raise InvalidReplicaAssignmentError(
            "Inconsistent replication factor between partitions, "
            f"partition {first_partition if expected_replication_factor is None else 0} "
            f"has {reference} while partitions [{_join(p for p, _ in bad)}] have "
            f"replication factors [{_join(rf for _, rf in bad)}], respectively."
        )
    return normalised


def _join(values) -> str:
    return ", ".join(str(v) for v in values)
