"""A Consumer's life in a group: the group decides its partitions, and it resumes from committed offsets.

Theory of operation. The Consumer calls `maintain()` from the thread that iterates or polls, before it
takes the next chunk of records (and at least every 0.5 s while it waits): that is where every join,
sync, callback and automatic commit happens, so the application's thread sees them between records,
never during one. `maintain` first makes sure the member is in the current generation
(membership.py): on the first call, and whenever the heartbeat thread or a commit learned that the
group rebalances, it rejoins. With the cooperative-sticky assignor it keeps consuming what it keeps:
it revokes (calls `on_revoke`, commits) only the partitions taken from it, and rejoins at once when
it gave any up, so their new owner gets them in the next generation. With an eager assignor (range,
round-robin) it revokes everything before it joins. A newly assigned partition starts at the group's
committed offset (with the leader epoch committed with it, which the fetcher validates against the
leader's log: KIP-320), or, when there is none, where `auto_offset_reset` says (earliest, latest,
or "none": an error). Auto commit stores the positions of what was returned, every
`auto_commit_interval_ms`, on revocation and on close: at least once.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from replog.client.group.assignors import COOPERATIVE_STICKY, RANGE
from replog.client.group.membership import Callback, Membership
from replog.client.results import GroupError
from replog.common.core.partitions import TopicPartition
from replog.v1 import common_pb2

if TYPE_CHECKING:
    from replog.client.consumer import Consumer

EARLIEST = "earliest"
LATEST = "latest"
NONE = "none"
OFFSET_RESETS = (EARLIEST, LATEST, NONE)
NO_LEADER_EPOCH = -1
IDLE_WAIT_S = 0.1  # how long a member without partitions waits between looks at its group


class GroupCoordination:
    def __init__(self, consumer: Consumer, group_id: str, *, auto_offset_reset: str, enable_auto_commit: bool,
                 auto_commit_interval_ms: int, on_assign: Callback | None, on_revoke: Callback | None,
                 assignors: tuple[str, ...] | None, session_timeout_ms: int, heartbeat_interval_ms: int,
                 rebalance_timeout_ms: int, client_id: str, metadata_max_age_ms: int) -> None:
        if auto_offset_reset not in OFFSET_RESETS:
            raise ValueError(f"auto_offset_reset {auto_offset_reset!r}: expected one of {', '.join(OFFSET_RESETS)}")
        self._consumer = consumer
        self._membership = Membership(consumer.metadata, group_id, tuple(consumer.topics), client_id=client_id,
                                      assignors=assignors or (COOPERATIVE_STICKY, RANGE),
                                      session_timeout_ms=session_timeout_ms,
                                      rebalance_timeout_ms=rebalance_timeout_ms,
                                      heartbeat_interval_ms=heartbeat_interval_ms,
                                      metadata_max_age_ms=metadata_max_age_ms)
        self.auto_offset_reset = auto_offset_reset
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_s = auto_commit_interval_ms / 1000
        self._commit_due_s = time.monotonic() + self.auto_commit_interval_s
        self._on_assign = on_assign or (lambda partitions: None)
        self._on_revoke = on_revoke or (lambda partitions: None)
        self._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"commit-{group_id}")

    @property
    def group_id(self) -> str:
        return self._membership.group_id

    @property
    def generation_id(self) -> int:
        return self._membership.generation_id

    # --- called by the Consumer, on the application's thread ---

    def maintain(self) -> bool:
        """Keep up with the group: a new partition count, a rebalance, an automatic commit that is due.
        Whether it rebalanced."""
        self._membership.partition_counts_changed()  # the leader's check: new partitions need an owner
        rebalanced = self._ensure_member()
        if self.enable_auto_commit and time.monotonic() >= self._commit_due_s:
            self._commit_quietly()
        return rebalanced

    @staticmethod
    def wait_for_partitions(remaining_s: float) -> bool:
        """A member without partitions waits a little before it looks at its group again; False when
        its caller's wait is over."""
        if remaining_s <= 0:
            return False
        time.sleep(min(remaining_s, IDLE_WAIT_S))
        return True

    def commit(self, offsets: dict[TopicPartition, int] | None) -> None:
        """Store `offsets`, by default every assigned partition's position, with the leader epoch of the record
        before each position when it is known; raises GroupError."""
        self._membership.commit(self._offsets_with_epochs(offsets))
        if offsets is None:
            self._commit_due_s = time.monotonic() + self.auto_commit_interval_s

    def commit_async(self, offsets: dict[TopicPartition, int] | None,
                     callback: Callable[[dict, BaseException | None], None] | None) -> Future:
        chosen = self._offsets_with_epochs(offsets)
        future = self._async.submit(self._membership.commit, chosen)
        if callback is not None:
            plain = {tp: offset for tp, (offset, _) in chosen.items()}
            future.add_done_callback(lambda done: callback(plain, done.exception()))
        return future

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: offset for tp, (offset, _) in self._membership.committed_with_epochs(partitions).items()}

    def close(self) -> None:
        try:
            if self.enable_auto_commit and self._consumer.assignment():
                self._commit_quietly()
        finally:
            self._async.shutdown(wait=True)
            self._membership.leave()

    def _offsets_with_epochs(self, offsets: dict[TopicPartition, int] | None) -> dict[TopicPartition, tuple[int, int]]:
        consumer = self._consumer
        if offsets is None:
            return {tp: (consumer.positions[tp], consumer.position_leader_epoch(tp)) for tp in consumer.assignment()}
        return {tp: (offset, consumer.position_leader_epoch(tp) if consumer.positions.get(tp) == offset
                     else NO_LEADER_EPOCH) for tp, offset in offsets.items()}

    # --- rebalances ---

    def _ensure_member(self) -> bool:
        rebalanced = False
        for _ in range(10):  # a cooperative rebalance takes two rounds; more means the group keeps changing
            if not self._membership.rejoin_needed.is_set():
                return rebalanced
            rebalanced = True
            owned = tuple(self._consumer.assignment())
            eager = self._membership.assignors[0] != COOPERATIVE_STICKY
            if eager and owned:
                self._revoke(list(owned))
                owned = ()
            joined = self._membership.rebalance(owned)
            kept = set(owned) & set(joined.assignment)
            revoked = sorted(set(owned) - kept)
            if revoked:
                self._revoke(revoked)
                self._membership.rejoin_needed.set()  # their new owner gets them in the next generation
            added = sorted(set(joined.assignment) - kept)
            if added:
                self._start(added)
                self._on_assign(added)
        return rebalanced

    def _revoke(self, partitions: list[TopicPartition]) -> None:
        self._on_revoke(partitions)
        if self.enable_auto_commit:
            self._commit_quietly({tp: self._consumer.positions[tp] for tp in partitions
                                  if tp in self._consumer.positions})
        gone = set(partitions)
        self._consumer._assign({tp: None for tp in self._consumer.assignment() if tp not in gone}, 0)

    def _start(self, partitions: list[TopicPartition]) -> None:
        committed = self._membership.committed_with_epochs(partitions)
        starts: dict[TopicPartition, tuple[int, int]] = {}
        for tp in partitions:
            if tp in committed:
                starts[tp] = committed[tp]
            elif self.auto_offset_reset == NONE:
                raise GroupError(common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE,
                                 f"group {self.group_id} has no committed offset for {tp} and auto_offset_reset "
                                 "is 'none'")
            else:
                starts[tp] = (self._consumer.offset_of(tp, self.auto_offset_reset), NO_LEADER_EPOCH)
        self._consumer._assign({**{tp: None for tp in self._consumer.assignment()}, **starts}, 0)

    def _commit_quietly(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        try:
            self.commit(offsets)
        except GroupError:
            self._commit_due_s = time.monotonic() + self.auto_commit_interval_s  # a rebalance follows
