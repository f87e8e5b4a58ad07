"""The group coordinator's values: states and their legal moves, members, protocols, offsets.

Theory of operation. A group moves through Kafka's coordinator states. The legal previous states of
each state are data (`VALID_PREVIOUS`), and `check_transition` asserts a move is one of them: an
illegal move is a bug in the state machine (group.py), never a peer's doing.

- EMPTY: no members; committed offsets may remain. A join starts a rebalance.
- PREPARING_REBALANCE: the coordinator waits until every known member has (re)joined, or the
  rebalance deadline passes; members that did not rejoin by then are removed.
- COMPLETING_REBALANCE: the join answers went out; the coordinator waits for the leader's
  assignment (SyncGroup).
- STABLE: the assignment is stored and handed out; heartbeats keep members alive.
- DEAD: the group was deleted, or its offsets partition moved to another coordinator.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from replog.common.core.partitions import TopicPartition


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.EMPTY, GroupState.STABLE,
                                               GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


def check_transition(current: GroupState, target: GroupState) -> None:
    assert current in VALID_PREVIOUS[target], f"illegal group transition {current.value} -> {target.value}"


NO_GENERATION = -1    # an OffsetCommit outside any generation (a group without members, an admin's reset)
NO_LEADER_EPOCH = -1  # a committed offset whose leader epoch is unknown
NO_OFFSET = -1        # OffsetFetch's answer for a partition the group never committed


@dataclass(frozen=True)
class Protocol:
    """One assignor a member supports, with its subscription under it."""

    name: str
    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes = b""


@dataclass(frozen=True)
class JoinRequest:
    """A validated JoinGroup (the servicer checked every field's range and size)."""

    member_id: str                 # "" on a first join
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]  # preferred first, names distinct


@dataclass
class Member:
    """A member as the coordinator sees it. Mutable: group.py alone changes it."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[Protocol, ...]
    last_heard_ms: int
    awaiting_join: bool = False
    awaiting_sync: bool = False
    assignment: tuple[TopicPartition, ...] = ()
    assignment_user_data: bytes = b""

    def protocol(self, name: str) -> Protocol | None:
        return next((p for p in self.protocols if p.name == name), None)


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_time_ms: int


@dataclass(frozen=True)
class GroupPolicy:
    """The coordinator's limits and timings (broker configuration)."""

    session_timeout_ms_min: int = 1_000
    session_timeout_ms_max: int = 300_000
    initial_rebalance_delay_ms: int = 3_000  # an empty group waits this long for more members to join
    members_max: int = 1_000
