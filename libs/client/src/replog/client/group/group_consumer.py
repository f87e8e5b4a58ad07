"""A consumer in a group: the group decides its partitions, and it resumes from committed offsets.

Theory of operation. `poll()` first makes sure the member is in the current generation
(membership.py): on the first poll, and whenever the heartbeat thread or a commit learned that the
group rebalances, it rejoins. With the cooperative-sticky assignor it keeps consuming what it keeps:
it revokes (calls `on_revoke`, commits) only the partitions taken from it, and rejoins at once when
it gave any up, so their new owner gets them in the next generation. With an eager assignor (range,
round-robin) it revokes everything before it joins. A newly assigned partition starts at the
group's committed offset, or, when there is none, where `auto_offset_reset` says (earliest, latest,
or "none": an error). Records are fetched by one plain `Consumer` per topic, told its partitions
through `Consumer.assign`. Auto commit stores the positions of what `poll` returned, every
`auto_commit_interval_ms`, before the next poll, on revocation and on close: at least once.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor

from replog.client.consumer import EARLIEST, LATEST, Consumer, ConsumerRecord
from replog.client.group.assignors import COOPERATIVE_STICKY, RANGE
from replog.client.group.membership import Callback, Membership
from replog.client.results import GroupError
from replog.common.core.partitions import TopicPartition
from replog.common.security.files import TlsFiles
from replog.v1 import common_pb2

NONE = "none"
OFFSET_RESETS = (EARLIEST, LATEST, NONE)
NO_LEADER_EPOCH = -1


class GroupConsumer:
    def __init__(self, bootstrap: list[str], topics: str | list[str], *, group_id: str,
                 auto_offset_reset: str = LATEST, enable_auto_commit: bool = True,
                 auto_commit_interval_ms: int = 5000, on_assign: Callback | None = None,
                 on_revoke: Callback | None = None, assignors: tuple[str, ...] = (COOPERATIVE_STICKY, RANGE),
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 3_000,
                 rebalance_timeout_ms: int = 30_000, client_id: str = "replog-consumer",
                 max_wait_ms: int = 500, metadata_max_age_ms: int = 30_000, tls: TlsFiles | None = None,
                 insecure: bool = False) -> None:
        if auto_offset_reset not in OFFSET_RESETS:
            raise ValueError(f"auto_offset_reset {auto_offset_reset!r}: expected one of {', '.join(OFFSET_RESETS)}")
        topics = [topics] if isinstance(topics, str) else list(topics)
        self._readers = {t: Consumer(bootstrap, t, partitions=[], max_wait_ms=max_wait_ms, tls=tls,
                                     insecure=insecure, reset_out_of_range=True) for t in topics}
        first = next(iter(self._readers.values()))
        self._membership = Membership(first.metadata, group_id, tuple(topics), client_id=client_id,
                                      assignors=assignors, session_timeout_ms=session_timeout_ms,
                                      rebalance_timeout_ms=rebalance_timeout_ms,
                                      heartbeat_interval_ms=heartbeat_interval_ms,
                                      metadata_max_age_ms=metadata_max_age_ms)
        self.auto_offset_reset = auto_offset_reset
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_s = auto_commit_interval_ms / 1000
        self._commit_due_s = time.monotonic() + self.auto_commit_interval_s
        self._on_assign = on_assign or (lambda partitions: None)
        self._on_revoke = on_revoke or (lambda partitions: None)
        self.max_wait_ms = max_wait_ms
        self.assignment: tuple[TopicPartition, ...] = ()
        self._positions: dict[TopicPartition, int] = {}  # next offset to hand to the application
        self._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"commit-{group_id}")

    @property
    def group_id(self) -> str:
        return self._membership.group_id

    @property
    def generation_id(self) -> int:
        return self._membership.generation_id

    # --- the application's calls ---

    def poll(self, timeout_ms: int | None = None) -> list[ConsumerRecord]:
        self._membership.partition_counts_changed()  # the leader's check: new partitions need an owner
        self._ensure_member()
        if self.enable_auto_commit and time.monotonic() >= self._commit_due_s:
            self._commit_quietly()
        readers = [r for r in self._readers.values() if r.partitions]
        if not readers:
            time.sleep((self.max_wait_ms if timeout_ms is None else timeout_ms) / 1000)
            return []
        wait_ms = max(1, (self.max_wait_ms if timeout_ms is None else timeout_ms) // len(readers))
        out: list[ConsumerRecord] = []
        for reader in readers:
            records = reader.poll(wait_ms)
            for r in records:
                tp = TopicPartition(r.topic, r.partition)
                if tp in self._positions:
                    self._positions[tp] = r.offset + 1
            out.extend(r for r in records if TopicPartition(r.topic, r.partition) in self._positions)
        return out

    def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        """Store `offsets` (partition -> the next offset to read), by default the position of every assigned
        partition (the offset after the last record returned); raises GroupError."""
        chosen = self._positions if offsets is None else offsets
        self._membership.commit({tp: (offset, NO_LEADER_EPOCH) for tp, offset in chosen.items()})
        if offsets is None:
            self._commit_due_s = time.monotonic() + self.auto_commit_interval_s

    def commit_async(self) -> Future:
        """`commit()` on a background thread; the future holds None or the GroupError."""
        offsets = {tp: (offset, NO_LEADER_EPOCH) for tp, offset in self._positions.items()}
        return self._async.submit(self._membership.commit, offsets)

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return self._membership.committed(partitions)

    def close(self) -> None:
        try:
            if self.enable_auto_commit and self.assignment:
                self._commit_quietly()
        finally:
            self._async.shutdown(wait=True)
            self._membership.leave()
            for reader in self._readers.values():
                reader.close()

    def __enter__(self) -> GroupConsumer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- rebalances ---

    def _ensure_member(self) -> None:
        for _ in range(10):  # a cooperative rebalance takes two rounds; more means the group keeps changing
            if not self._membership.rejoin_needed.is_set():
                return
            eager = self._membership.assignors[0] != COOPERATIVE_STICKY
            if eager and self.assignment:
                self._revoke(list(self.assignment))
            joined = self._membership.rebalance(self.assignment)
            kept = set(self.assignment) & set(joined.assignment)
            revoked = sorted(set(self.assignment) - kept)
            if revoked:
                self._revoke(revoked)
                self._membership.rejoin_needed.set()  # their new owner gets them in the next generation
            added = sorted(set(joined.assignment) - kept)
            self.assignment = tuple(sorted(joined.assignment))
            if added:
                self._start(added)
                self._on_assign(added)

    def _revoke(self, partitions: list[TopicPartition]) -> None:
        self._on_revoke(partitions)
        if self.enable_auto_commit:
            self._commit_quietly()
        for tp in partitions:
            self._positions.pop(tp, None)
        self.assignment = tuple(tp for tp in self.assignment if tp not in set(partitions))
        self._tell_readers()

    def _start(self, partitions: list[TopicPartition]) -> None:
        committed = self._membership.committed(partitions)
        for tp in partitions:
            if tp in committed:
                self._positions[tp] = committed[tp]
            elif self.auto_offset_reset == NONE:
                raise GroupError(common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE,
                                 f"group {self.group_id} has no committed offset for {tp} and auto_offset_reset "
                                 "is 'none'")
            else:
                self._positions[tp] = self._readers[tp.topic].offset_of(tp.partition, self.auto_offset_reset)
        self._tell_readers()

    def _tell_readers(self) -> None:
        for topic, reader in self._readers.items():
            reader.assign({tp.partition: offset for tp, offset in self._positions.items() if tp.topic == topic})

    def _commit_quietly(self) -> None:
        try:
            self.commit()
        except GroupError:
            self._commit_due_s = time.monotonic() + self.auto_commit_interval_s  # a rebalance follows
