"""One consumer group on its coordinator: membership, rebalances, generations, sessions.

Theory of operation (Kafka's group coordinator protocol, KIP-62 session and rebalance timeouts,
KIP-134 initial rebalance delay). A rebalance has two phases:

1. Join. A join from a new member, a rejoin, a leave or a member's death moves the group to
   PREPARING_REBALANCE. Every JoinGroup is parked until the phase completes: when every known
   member has rejoined (an empty group first waits `initial_rebalance_delay_ms`, extended by each
   new member up to the rebalance timeout, so members started together land in one generation),
   or when the rebalance deadline passes, which removes whoever did not rejoin. Completing bumps
   the generation, picks the assignor all members support (most first preferences, then name) and
   a leader (the old one if it stayed), and answers every parked join; the leader's answer lists
   every member's subscription.
2. Sync. The leader sends the assignment. The coordinator asks its adapter to persist the group
   (`Outcome.persist`), and only when `assignment_persisted` confirms it does the group become
   STABLE and every parked SyncGroup get its member's partitions.

Invariants: the generation only grows; a member awaiting a join answer is never expired by its
session (the rebalance deadline bounds it instead); a commit is accepted only from a member of the
current generation, or outside any generation when the group has no members. Time is `now_ms`,
passed in by the caller; member ids are made by the caller too. Nothing here does I/O.
"""

from __future__ import annotations

from collections import Counter

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.groups.core.answers import GroupSnapshot, JoinAnswer, MemberSnapshot, Outcome, SyncAnswer, refused
from replog.broker.groups.core.model import (
    NO_GENERATION,
    GroupPolicy,
    GroupState,
    JoinRequest,
    Member,
    Protocol,
    check_transition,
)
from replog.common.core.partitions import TopicPartition

_MOVED = "the group was deleted or its coordinator moved; call FindCoordinator again"


class Group:
    def __init__(self, group_id: str, policy: GroupPolicy) -> None:
        self.group_id = group_id
        self.policy = policy
        self.state = GroupState.EMPTY
        self.generation_id = 0
        self.protocol_type = ""
        self.protocol_name = ""
        self.leader_member_id = ""
        self.members: dict[str, Member] = {}  # in join order
        self.rebalance_started_ms = 0
        self.join_not_before_ms = 0   # the initial delay: the join phase does not complete earlier
        self.rebalance_deadline_ms = 0
        self.assignment_pending = False  # the leader's assignment of this generation is being persisted

    # --- restoring from the offsets partition ---

    @classmethod
    def restore(cls, snapshot: GroupSnapshot, policy: GroupPolicy, now_ms: int) -> Group:
        """The group as its last stored snapshot left it; members get a full session to find us."""
        group = cls(snapshot.group_id, policy)
        group.generation_id = snapshot.generation_id
        group.protocol_type = snapshot.protocol_type
        group.protocol_name = snapshot.protocol_name
        group.leader_member_id = snapshot.leader_member_id
        for m in snapshot.members:
            group.members[m.member_id] = Member(
                m.member_id, m.client_id, m.client_host, m.session_timeout_ms, m.rebalance_timeout_ms,
                (m.protocol,), last_heard_ms=now_ms, assignment=m.assignment, assignment_user_data=m.user_data)
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group

    def snapshot(self) -> GroupSnapshot:
        members = tuple(
            MemberSnapshot(m.member_id, m.client_id, m.client_host, m.session_timeout_ms, m.rebalance_timeout_ms,
                           m.protocol(self.protocol_name) or Protocol(self.protocol_name, ()),
                           m.assignment, m.assignment_user_data)
            for m in self.members.values())
        return GroupSnapshot(self.group_id, self.generation_id, self.protocol_type, self.protocol_name,
                             self.leader_member_id, members)

    # --- calls ---

    def join(self, request: JoinRequest, new_member_id: str, now_ms: int) -> Outcome:
        """A JoinGroup. The caller's answer is in the outcome's answers, now or in a later outcome."""
        refusal = self._join_refusal(request)
        if refusal:
            return Outcome(refusal=refusal)
        is_new = not request.member_id
        member_id = new_member_id if is_new else request.member_id
        if is_new:
            self.members[member_id] = Member(member_id, request.client_id, request.client_host,
                                             request.session_timeout_ms, request.rebalance_timeout_ms,
                                             request.protocols, last_heard_ms=now_ms)
        member = self.members[member_id]
        member.protocols = request.protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.last_heard_ms = now_ms
        member.awaiting_join = True
        if not self.protocol_type:
            self.protocol_type = request.protocol_type
        outcome = self._prepare_rebalance(now_ms, new_member=is_new)
        return outcome.merge(self._maybe_complete_join(now_ms))

    def sync(self, member_id: str, generation_id: int, assignments: dict[str, tuple[tuple[TopicPartition, ...], bytes]],
             now_ms: int) -> Outcome:
        """A SyncGroup; `assignments` is the leader's (empty from the others)."""
        refusal = self._member_refusal(member_id, generation_id)
        if refusal:
            return Outcome(refusal=refusal)
        member = self.members[member_id]
        member.last_heard_ms = now_ms
        if self.state is GroupState.PREPARING_REBALANCE:
            return refused(ErrorCode.REBALANCE_IN_PROGRESS, "the group is rebalancing; rejoin it")
        if self.state is GroupState.STABLE:
            return Outcome(answers=[self._sync_answer(member)])
        member.awaiting_sync = True
        if member_id != self.leader_member_id or self.assignment_pending:
            return Outcome()  # answered when the leader's assignment is stored
        unknown = sorted(set(assignments) - set(self.members))
        if unknown:
            return refused(ErrorCode.INVALID_REQUEST, f"the assignment names members not in the group: {unknown[:5]}")
        for m in self.members.values():
            m.assignment, m.assignment_user_data = assignments.get(m.member_id, ((), b""))
        self.assignment_pending = True
        return Outcome(persist=self.snapshot())

    def assignment_persisted(self, generation_id: int, error: Refusal | None, now_ms: int) -> Outcome:
        """The adapter stored (or failed to store) the snapshot that `sync` asked it to persist."""
        if generation_id != self.generation_id or self.state is not GroupState.COMPLETING_REBALANCE:
            return Outcome()  # a rebalance began meanwhile; its own answers went out
        waiting = [m for m in self.members.values() if m.awaiting_sync]
        for m in waiting:
            m.awaiting_sync = False
        if error is not None:
            for m in self.members.values():
                m.assignment, m.assignment_user_data = (), b""
            answers = [SyncAnswer(m.member_id, error.code, error.reason) for m in waiting]
            return Outcome(answers=answers).merge(self._prepare_rebalance(now_ms, new_member=False))
        self._move(GroupState.STABLE)
        return Outcome(answers=[self._sync_answer(m) for m in waiting])

    def heartbeat(self, member_id: str, generation_id: int, now_ms: int) -> Refusal | None:
        refusal = self._member_refusal(member_id, generation_id)
        if refusal:
            return refusal
        self.members[member_id].last_heard_ms = now_ms
        if self.state is GroupState.PREPARING_REBALANCE:
            return Refusal(ErrorCode.REBALANCE_IN_PROGRESS, "the group is rebalancing; rejoin it")
        return None

    def leave(self, member_id: str, now_ms: int) -> Outcome:
        if self.state is GroupState.DEAD:
            return refused(ErrorCode.NOT_COORDINATOR, _MOVED)
        if member_id not in self.members:
            return refused(ErrorCode.UNKNOWN_MEMBER_ID, f"{member_id!r} is not a member of group {self.group_id!r}")
        return self._remove(member_id, now_ms, "left the group")

    def commit_refusal(self, member_id: str, generation_id: int, now_ms: int) -> Refusal | None:
        """None when an OffsetCommit from this member at this generation may be stored."""
        if self.state is GroupState.DEAD:
            return Refusal(ErrorCode.NOT_COORDINATOR, _MOVED)
        if generation_id == NO_GENERATION and not member_id:
            if self.members:
                return Refusal(ErrorCode.ILLEGAL_GENERATION,
                               f"group {self.group_id!r} has members; only a member of its current generation "
                               "may commit")
            return None
        refusal = self._member_refusal(member_id, generation_id)
        if refusal:
            return refusal
        if self.state is GroupState.COMPLETING_REBALANCE:
            return Refusal(ErrorCode.REBALANCE_IN_PROGRESS, "the group is completing a rebalance; commit after it")
        self.members[member_id].last_heard_ms = now_ms
        return None

    def alter_offsets_refusal(self) -> Refusal | None:
        if self.state is GroupState.DEAD:
            return Refusal(ErrorCode.NOT_COORDINATOR, _MOVED)
        if self.members:
            return Refusal(ErrorCode.NON_EMPTY_GROUP,
                           f"group {self.group_id!r} has {len(self.members)} active member(s); stop them first")
        return None

    def delete(self) -> Refusal | None:
        """Mark the group deleted (the adapter appends the tombstones), unless it has members."""
        refusal = self.alter_offsets_refusal()
        if refusal:
            return refusal
        self._move(GroupState.DEAD)
        return None

    def unload(self) -> Outcome:
        """The coordinator lost the offsets partition: every parked call learns it must look again."""
        answers: list[JoinAnswer | SyncAnswer] = []
        for m in self.members.values():
            if m.awaiting_join:
                answers.append(JoinAnswer(m.member_id, ErrorCode.NOT_COORDINATOR, _MOVED))
            if m.awaiting_sync:
                answers.append(SyncAnswer(m.member_id, ErrorCode.NOT_COORDINATOR, _MOVED))
        if self.state is not GroupState.DEAD:
            self._move(GroupState.DEAD)
        return Outcome(answers=answers)

    def tick(self, now_ms: int) -> Outcome:
        """Expire members whose session ended and complete a join phase whose time has come."""
        outcome = Outcome()
        if self.state is GroupState.DEAD:
            return outcome
        for m in list(self.members.values()):
            if not m.awaiting_join and now_ms - m.last_heard_ms > m.session_timeout_ms:
                outcome.merge(self._remove(m.member_id, now_ms, "its session timed out"))
        if self.state is GroupState.PREPARING_REBALANCE and now_ms >= self.rebalance_deadline_ms:
            for m in [m for m in self.members.values() if not m.awaiting_join]:
                del self.members[m.member_id]  # did not rejoin in time
        return outcome.merge(self._maybe_complete_join(now_ms))

    # --- the state machine's steps ---

    def _join_refusal(self, request: JoinRequest) -> Refusal | None:
        if self.state is GroupState.DEAD:
            return Refusal(ErrorCode.NOT_COORDINATOR, _MOVED)
        p = self.policy
        if not p.session_timeout_ms_min <= request.session_timeout_ms <= p.session_timeout_ms_max:
            return Refusal(ErrorCode.INVALID_SESSION_TIMEOUT,
                           f"session_timeout_ms {request.session_timeout_ms} is outside the coordinator's "
                           f"{p.session_timeout_ms_min}..{p.session_timeout_ms_max}")
        if request.member_id and request.member_id not in self.members:
            return Refusal(ErrorCode.UNKNOWN_MEMBER_ID,
                           f"{request.member_id!r} is not a member of group {self.group_id!r}; join with an empty id")
        if not request.member_id and len(self.members) >= p.members_max:
            return Refusal(ErrorCode.GROUP_MAX_SIZE_REACHED, f"group {self.group_id!r} has {p.members_max} members")
        others = [m for m in self.members.values() if m.member_id != request.member_id]
        if others and request.protocol_type != self.protocol_type:
            return Refusal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                           f"protocol type {request.protocol_type!r} differs from the group's {self.protocol_type!r}")
        names = {p.name for p in request.protocols}
        for m in others:
            names &= {p.name for p in m.protocols}
        if not names:
            return Refusal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                           "the member shares no assignor with the group's members")
        return None

    def _member_refusal(self, member_id: str, generation_id: int) -> Refusal | None:
        if self.state is GroupState.DEAD:
            return Refusal(ErrorCode.NOT_COORDINATOR, _MOVED)
        if member_id not in self.members:
            return Refusal(ErrorCode.UNKNOWN_MEMBER_ID,
                           f"{member_id!r} is not a member of group {self.group_id!r}; rejoin with an empty id")
        if generation_id != self.generation_id:
            return Refusal(ErrorCode.ILLEGAL_GENERATION,
                           f"generation {generation_id} is not group {self.group_id!r}'s current "
                           f"{self.generation_id}; rejoin")
        return None

    def _prepare_rebalance(self, now_ms: int, *, new_member: bool) -> Outcome:
        outcome = Outcome()
        if self.state is GroupState.COMPLETING_REBALANCE:
            for m in self.members.values():  # the parked syncs of the generation that will not be
                if m.awaiting_sync:
                    m.awaiting_sync = False
                    outcome.answers.append(SyncAnswer(m.member_id, ErrorCode.REBALANCE_IN_PROGRESS,
                                                      "the group began another rebalance; rejoin it"))
        timeout_ms = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        if self.state is not GroupState.PREPARING_REBALANCE:
            from_empty = self.state is GroupState.EMPTY
            self._move(GroupState.PREPARING_REBALANCE)
            self.assignment_pending = False
            self.rebalance_started_ms = now_ms
            self.rebalance_deadline_ms = now_ms + timeout_ms
            delay_ms = self.policy.initial_rebalance_delay_ms if from_empty else 0
            self.join_not_before_ms = min(now_ms + delay_ms, self.rebalance_deadline_ms)
        elif new_member and self.join_not_before_ms > now_ms:  # still in the initial delay: wait a bit more
            self.join_not_before_ms = min(now_ms + self.policy.initial_rebalance_delay_ms,
                                          self.rebalance_started_ms + timeout_ms)
        return outcome

    def _maybe_complete_join(self, now_ms: int) -> Outcome:
        if self.state is not GroupState.PREPARING_REBALANCE:
            return Outcome()
        everyone_in = all(m.awaiting_join for m in self.members.values())
        if not (everyone_in and now_ms >= self.join_not_before_ms) and now_ms < self.rebalance_deadline_ms:
            return Outcome()
        self.generation_id += 1
        if not self.members:
            self._move(GroupState.EMPTY)
            self.protocol_type = self.protocol_name = self.leader_member_id = ""
            return Outcome(persist=self.snapshot())
        self.protocol_name = self._choose_protocol()
        if self.leader_member_id not in self.members:
            self.leader_member_id = next(iter(self.members))
        self._move(GroupState.COMPLETING_REBALANCE)
        subscriptions = tuple((m.member_id, m.protocol(self.protocol_name)) for m in self.members.values())
        answers: list[JoinAnswer | SyncAnswer] = []
        for m in self.members.values():
            m.awaiting_join = False
            m.last_heard_ms = max(m.last_heard_ms, now_ms)
            is_leader = m.member_id == self.leader_member_id
            answers.append(JoinAnswer(m.member_id, generation_id=self.generation_id, protocol_name=self.protocol_name,
                                      leader_member_id=self.leader_member_id,
                                      members=subscriptions if is_leader else ()))
        return Outcome(answers=answers)

    def _choose_protocol(self) -> str:
        candidates = set.intersection(*({p.name for p in m.protocols} for m in self.members.values()))
        assert candidates, "a join sharing no assignor is refused before it is admitted"
        votes = Counter(next(p.name for p in m.protocols if p.name in candidates) for m in self.members.values())
        return min(candidates, key=lambda name: (-votes[name], name))

    def _remove(self, member_id: str, now_ms: int, why: str) -> Outcome:
        member = self.members.pop(member_id)
        outcome = Outcome()
        if member.awaiting_join:
            outcome.answers.append(JoinAnswer(member_id, ErrorCode.UNKNOWN_MEMBER_ID, f"the member {why}"))
        if member.awaiting_sync:
            outcome.answers.append(SyncAnswer(member_id, ErrorCode.UNKNOWN_MEMBER_ID, f"the member {why}"))
        outcome.merge(self._prepare_rebalance(now_ms, new_member=False))
        return outcome.merge(self._maybe_complete_join(now_ms))

    def _sync_answer(self, member: Member) -> SyncAnswer:
        return SyncAnswer(member.member_id, assignment=member.assignment, user_data=member.assignment_user_data)

    def _move(self, target: GroupState) -> None:
        check_transition(self.state, target)
        self.state = target
