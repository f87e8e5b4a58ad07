"""The background scrubber: finds bit rot in rolled segments before a reader does (issue 40).

Theory of operation
-------------------
A checkpointer chore. Each call earns `bytes_per_second` times the time since the last one (at most one
second's worth is saved up) and spends it verifying whole rolled segments, one at a time, in a cycle over
every hosted replica and every rolled segment of it (`PartitionLog.verify`'s checks: framing, CRC, every
record, contiguous offsets). A segment larger than what is left is still verified whole; the debt is paid
before the next one, so the rate holds on average. Rolled segments are immutable, so the check reads a
duplicate of the segment's descriptor without holding the partition's lock.

A damaged segment is logged and counted once. On a follower the log is cut at the segment's base offset and
the fetcher, told so (`refetch`: an idle partition's fetch session still holds the old log end), takes the
records again from the leader. A leader keeps its log: its reads never serve a batch
whose check fails (they answer STORAGE_ERROR). It reports the damage once and gives up its leadership
(`resign`, control/resignations.py): the controller moves it to another live ISR member and this replica
becomes a follower of it. The next pass over the same segment finds the damage again and, the replica now
following, takes the follower's path (not reported, nor counted, a second time). With no other ISR member
to take over, the replica keeps leading and serving what verifies; made leader again before that next pass
(a preferred election, say), it gives the leadership up again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.log.segment_scan import verify_batches
from replog.broker.replicas.follower_side import truncate_corrupt_segment
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.common.clock import Clock
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)


class Scrubber:
    def __init__(self, hosted: Callable[[], Iterable[HostedPartition]], clock: Clock, *, bytes_per_second: int,
                 on_corrupt: Callable[[], None] = lambda: None,
                 resign: Callable[[TopicPartition], None] = lambda topic_partition: None,
                 refetch: Callable[[TopicPartition], None] = lambda topic_partition: None) -> None:
        self._hosted = hosted
        self._clock = clock
        self._bytes_per_second = bytes_per_second
        self._on_corrupt = on_corrupt
        self._resign = resign  # asks the controller for another leader of a damaged replica this broker leads
        self._refetch = refetch  # tells the replica's fetcher that its log was cut (the leader holds the old end)
        self._budget_bytes = 0.0
        self._last_ms = clock.monotonic_ms()
        self._pass: list[HostedPartition] = []  # this pass's replicas, in order; _position: the one scrubbed now
        self._position = 0
        self._after_base = -1  # the base offset of the last segment verified in it
        # damage reported by a leader, which keeps it: (replica, base offset) -> the leader epoch it reported in
        self._reported: dict[tuple[TopicPartition, int], int] = {}

    def __call__(self) -> None:
        if self._bytes_per_second <= 0:
            return
        now_ms = self._clock.monotonic_ms()
        earned = self._bytes_per_second * (now_ms - self._last_ms) / 1000
        self._last_ms = now_ms
        self._budget_bytes = min(self._budget_bytes + earned, float(self._bytes_per_second))
        verified: set[tuple[TopicPartition, int]] = set()
        while self._budget_bytes > 0:
            found = self._next_segment()
            if found is None:
                return
            hosted, base_offset, fd, size_bytes, name = found
            if (hosted.topic_partition, base_offset) in verified:  # a whole cycle in one call: enough
                os.close(fd)
                return
            verified.add((hosted.topic_partition, base_offset))
            try:
                reports, _ = verify_batches(fd, size_bytes, name, base_offset, hosted.log.gaps_allowed)
            finally:
                os.close(fd)
            self._budget_bytes -= max(size_bytes, 1)
            if reports:
                self._corrupt(hosted, base_offset, name, reports[0].reason, len(reports))

    def _next_segment(self):
        """The rolled segment after the last one verified, in (replica, base offset) order, wrapping around."""
        for _ in range(2):  # the rest of this pass; then, once, a new pass from the start
            while self._position < len(self._pass):
                hosted = self._pass[self._position]
                found = hosted.run(_rolled_after, self._after_base)
                if found is not None:
                    self._after_base = found[0]
                    return (hosted, *found)
                self._position, self._after_base = self._position + 1, -1
            self._begin_pass()
            if not self._pass:
                return None
        return None

    def _begin_pass(self) -> None:
        """Take the replicas with a rolled segment, in order, once per pass: sorting every hosted replica for
        each segment cost a checkpointer thread a quarter of a core at 10,000 partitions."""
        # read without the lock: a replica that just rolled waits for the next pass
        self._pass = sorted((h for h in self._hosted() if h.usable and h.log.segment_count > 1),
                            key=lambda h: h.topic_partition)
        self._position, self._after_base = 0, -1

    def _corrupt(self, hosted: HostedPartition, base_offset: int, name: str, reason: str, problems: int) -> None:
        damage = (hosted.topic_partition, base_offset)
        if damage not in self._reported:  # else counted when a leader found it
            self._on_corrupt()
        truncated = truncate_corrupt_segment(hosted, base_offset)
        if truncated is not None:
            self._reported.pop(damage, None)
            self._refetch(hosted.topic_partition)
            log.error("%s: the scrubber found %d problems in segment %s (%s); cut the log from offset %d to "
                      "%d to fetch it again from the leader", hosted.topic_partition, problems, name, reason,
                      truncated.log_end_offset_before, truncated.log_end_offset_after)
            return
        leader_epoch = hosted.replica.state.leader_epoch
        if self._reported.get(damage) == leader_epoch:
            return  # asked already; a leader again in a later epoch (say, a preferred election) asks again
        self._reported[damage] = leader_epoch
        log.error("%s: the scrubber found %d problems in segment %s (%s); as the leader the replica keeps it, "
                  "serves nothing that fails its check and gives up its leadership", hosted.topic_partition,
                  problems, name, reason)
        self._resign(hosted.topic_partition)


def _rolled_after(hosted: HostedPartition, base_offset: int):
    if not hosted.usable:
        return None, NO_EFFECTS
    return hosted.log.rolled_segment_after(base_offset), NO_EFFECTS
