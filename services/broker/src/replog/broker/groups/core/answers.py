"""What the group state machine hands back: answers to parked calls, and what to persist.

A JoinGroup is answered when the group's join phase completes, which another member's join, a
leave, a session expiry or the clock may cause; a SyncGroup is answered when the leader's
assignment is stored. So group.py returns `Outcome`s listing answers for any member, and the
adapter delivers each to the call parked for that member. `persist` is a group snapshot to append
to the offsets partition before anything that depends on it is answered (decide, persist, apply,
send); for a leader's assignment the adapter then calls `Group.assignment_persisted`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.groups.core.model import Protocol
from replog.common.core.partitions import TopicPartition


@dataclass(frozen=True)
class JoinAnswer:
    member_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    generation_id: int = -1
    protocol_name: str = ""
    leader_member_id: str = ""
    members: tuple[tuple[str, Protocol], ...] = ()  # every member's subscription, to the leader only


@dataclass(frozen=True)
class SyncAnswer:
    member_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    assignment: tuple[TopicPartition, ...] = ()
    user_data: bytes = b""


@dataclass(frozen=True)
class MemberSnapshot:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol: Protocol                   # the member's subscription under the group's assignor
    assignment: tuple[TopicPartition, ...]
    user_data: bytes


@dataclass(frozen=True)
class GroupSnapshot:
    """A group's membership as stored in the offsets partition when a rebalance completes."""

    group_id: str
    generation_id: int
    protocol_type: str
    protocol_name: str
    leader_member_id: str
    members: tuple[MemberSnapshot, ...]


@dataclass
class Outcome:
    refusal: Refusal | None = None
    answers: list[JoinAnswer | SyncAnswer] = field(default_factory=list)
    persist: GroupSnapshot | None = None

    def merge(self, other: Outcome) -> Outcome:
        assert self.persist is None or other.persist is None, "one outcome persists at most one snapshot"
        self.answers.extend(other.answers)
        self.persist = self.persist or other.persist
        return self


def refused(code: ErrorCode, reason: str) -> Outcome:
    return Outcome(refusal=Refusal(code, reason))
