"""Partition assignors, run by the group's leader member: pure functions of the subscriptions.

Theory of operation. Every member sends its subscription (topics, and the partitions it owns now);
the leader runs the group's assignor over all of them and the partition counts, and the
coordinator hands each member its share. Each assignor gives every partition of a subscribed topic
to exactly one member subscribed to that topic, and is deterministic (members and partitions are
taken in sorted order), so every leader computes the same answer from the same input.

- `range` (Kafka's RangeAssignor): per topic, the members subscribed to it in id order each take a
  contiguous run; the first `partitions % members` take one more.
- `roundrobin`: every partition in (topic, partition) order is dealt to the next member, in id
  order, that subscribes to its topic.
- `cooperative-sticky` (KIP-429, KIP-54): start from what members own, keep all of it that is still
  valid, deal the rest to the least loaded eligible member, then move single partitions from the
  most to the least loaded member while that narrows the gap by two or more: only what must move,
  moves. Cooperative: a partition moving from one member to another is not handed to its new owner
  in the same generation; the old owner's assignment simply lacks it, so it revokes it and rejoins,
  and the next rebalance gives it out (`Assignment.withheld` says a follow-up rebalance is due). A
  partition two members claim (one of them stale) is withheld the same way until both let it go.
  Partitions that do not move are never revoked, so they keep being consumed during a rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.core.partitions import TopicPartition

RANGE = "range"
ROUND_ROBIN = "roundrobin"
COOPERATIVE_STICKY = "cooperative-sticky"
ASSIGNORS = (RANGE, ROUND_ROBIN, COOPERATIVE_STICKY)


@dataclass(frozen=True)
class Subscription:
    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class Assignment:
    by_member: dict[str, tuple[TopicPartition, ...]]
    withheld: tuple[TopicPartition, ...] = ()  # moving between members: given out at the next rebalance


def _all_partitions(subscriptions: list[Subscription], partition_counts: dict[str, int]) -> list[TopicPartition]:
    topics = sorted({t for s in subscriptions for t in s.topics if partition_counts.get(t, 0) > 0})
    return [TopicPartition(t, p) for t in topics for p in range(partition_counts[t])]


def _eligible(subscriptions: list[Subscription]) -> dict[str, list[str]]:
    by_topic: dict[str, list[str]] = {}
    for s in sorted(subscriptions, key=lambda s: s.member_id):
        for topic in s.topics:
            by_topic.setdefault(topic, []).append(s.member_id)
    return by_topic


def _result(subscriptions: list[Subscription], given: dict[str, list[TopicPartition]]) -> dict:
    return {s.member_id: tuple(sorted(given.get(s.member_id, []))) for s in subscriptions}


def range_assign(subscriptions: list[Subscription], partition_counts: dict[str, int]) -> Assignment:
    given: dict[str, list[TopicPartition]] = {}
    for topic, members in sorted(_eligible(subscriptions).items()):
        count = partition_counts.get(topic, 0)
        each, extra = divmod(count, len(members))
        start = 0
        for i, member_id in enumerate(members):
            size = each + (1 if i < extra else 0)
            given.setdefault(member_id, []).extend(TopicPartition(topic, p) for p in range(start, start + size))
            start += size
    return Assignment(_result(subscriptions, given))


def round_robin_assign(subscriptions: list[Subscription], partition_counts: dict[str, int]) -> Assignment:
    members = sorted(s.member_id for s in subscriptions)
    topics_of = {s.member_id: set(s.topics) for s in subscriptions}
    given: dict[str, list[TopicPartition]] = {}
    turn = 0
    for tp in _all_partitions(subscriptions, partition_counts):
        for step in range(len(members)):
            member_id = members[(turn + step) % len(members)]
            if tp.topic in topics_of[member_id]:
                given.setdefault(member_id, []).append(tp)
                turn = (turn + step + 1) % len(members)
                break
    return Assignment(_result(subscriptions, given))


def sticky_assign(subscriptions: list[Subscription], partition_counts: dict[str, int]) -> dict[str, set]:
    """The balanced target that keeps as much of the current ownership as balance allows."""
    valid = set(_all_partitions(subscriptions, partition_counts))
    topics_of = {s.member_id: set(s.topics) for s in subscriptions}
    members = sorted(topics_of)
    target: dict[str, set[TopicPartition]] = {m: set() for m in members}
    taken: set[TopicPartition] = set()
    for s in sorted(subscriptions, key=lambda s: s.member_id):  # keep what is owned and still valid, once
        for tp in sorted(s.owned):
            if tp in valid and tp.topic in topics_of[s.member_id] and tp not in taken:
                target[s.member_id].add(tp)
                taken.add(tp)
    for tp in sorted(valid - taken):  # deal the rest to the least loaded eligible member
        eligible = [m for m in members if tp.topic in topics_of[m]]
        target[min(eligible, key=lambda m: (len(target[m]), m))].add(tp)
    for _ in range(len(valid) + 1):  # then narrow the gaps one partition at a time
        if not _move_one(target, topics_of):
            break
    return target


def _move_one(target: dict[str, set[TopicPartition]], topics_of: dict[str, set[str]]) -> bool:
    for giver in sorted(target, key=lambda m: (-len(target[m]), m)):
        for taker in sorted(target, key=lambda m: (len(target[m]), m)):
            if len(target[giver]) - len(target[taker]) < 2:
                break
            movable = sorted(tp for tp in target[giver] if tp.topic in topics_of[taker])
            if movable:
                tp = movable[-1]
                target[giver].remove(tp)
                target[taker].add(tp)
                return True
    return False


def cooperative_sticky_assign(subscriptions: list[Subscription], partition_counts: dict[str, int]) -> Assignment:
    target = sticky_assign(subscriptions, partition_counts)
    owners: dict[TopicPartition, set[str]] = {}
    for s in subscriptions:
        for tp in s.owned:
            owners.setdefault(tp, set()).add(s.member_id)
    # a partition another member still owns (or that two members claim) waits for the revocation
    withheld = sorted(tp for m, tps in target.items() for tp in tps if owners.get(tp, {m}) - {m})
    held = set(withheld)
    given = {m: [tp for tp in tps if tp not in held] for m, tps in target.items()}
    return Assignment(_result(subscriptions, given), tuple(withheld))


def assign(name: str, subscriptions: list[Subscription], partition_counts: dict[str, int]) -> Assignment:
    if name == RANGE:
        return range_assign(subscriptions, partition_counts)
    if name == ROUND_ROBIN:
        return round_robin_assign(subscriptions, partition_counts)
    if name == COOPERATIVE_STICKY:
        return cooperative_sticky_assign(subscriptions, partition_counts)
    raise ValueError(f"unknown assignor {name!r}; expected one of {', '.join(ASSIGNORS)}")
