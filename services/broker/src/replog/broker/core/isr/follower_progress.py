"""What a leader knows about one follower, and the caught-up rule.

Theory of operation (docs/architecture.md, "High watermark and ISR"; Kafka `Replica.updateFetchState`,
`Partition.isFollowerInSync`):

Each fetch a leader accepts from follower F carries F's log end offset (its
`fetch_offset`). The leader records it with the fetch time and its own LEO at
that moment.

Caught-up rule. F was caught up at time t if at t it held everything the
leader held at t. From fetches alone the leader can prove two things:
- a fetch at offset >= the leader's current LEO shows F caught up *now*;
- a fetch at offset >= the leader's LEO at F's *previous* fetch shows F held,
  by now, everything the leader had at that previous fetch; F was therefore
  caught up as of the previous fetch time (it cannot claim later, since the
  leader may have appended since).
`last_caught_up_ms` takes the later of the two proofs and never moves back.
A follower whose last_caught_up_ms is older than `replica_lag_time_max_ms`
is out of sync -- unless its LEO equals the leader's LEO right now (an idle
partition does not push its followers out).

Append rule. A follower whose LEO equals the leader's LEO just before an append
held everything the leader held until that moment, so it was caught up then
(`before_append`). An idle follower is not fetched again (its fetch session reads
nothing for it; replication/fetch_sessions.py), so without this rule its
last_caught_up_ms would date from its last fetch, and once that is older than
the lag limit the next append would put it out of sync at once, before its next
fetch could show it caught up: at thousands of partitions, each appended every
few seconds, the periodic check found hundreds of such followers at a time.

Rejoin rule. A non-ISR follower may rejoin when its LEO >= the leader's HW
and >= the start offset of the leader's current epoch (it holds every
committed record and has replicated into this epoch).
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.log_view import NO_OFFSET


class FollowerProgress(NamedTuple):
    """One follower as seen by the leader in the current leader epoch."""

    log_end_offset: int = NO_OFFSET
    last_fetch_ms: int | None = None
    leader_log_end_offset_at_last_fetch: int = NO_OFFSET
    last_caught_up_ms: int | None = None

    @classmethod
    def in_sync_since(cls, now_ms: int) -> FollowerProgress:
        """An ISR member when a leader takes over: given a full lag period of grace."""
        return cls(last_caught_up_ms=now_ms)


def after_fetch(
    progress: FollowerProgress, *, fetch_offset: int, leader_log_end_offset: int, now_ms: int
) -> FollowerProgress:
    """The follower's progress after the leader accepted a fetch at `fetch_offset`."""
    assert 0 <= fetch_offset <= leader_log_end_offset, (fetch_offset, leader_log_end_offset)
    caught_up_ms = progress.last_caught_up_ms
    if fetch_offset >= leader_log_end_offset:
        caught_up_ms = _later(caught_up_ms, now_ms)
    elif progress.last_fetch_ms is not None and fetch_offset >= progress.leader_log_end_offset_at_last_fetch:
        caught_up_ms = _later(caught_up_ms, progress.last_fetch_ms)
    return FollowerProgress(  # every field anew: a constructor call costs half of `replace`
        log_end_offset=fetch_offset,
        last_fetch_ms=now_ms,
        leader_log_end_offset_at_last_fetch=leader_log_end_offset,
        last_caught_up_ms=caught_up_ms,
    )


def before_append(progress: FollowerProgress, *, leader_log_end_offset: int, now_ms: int) -> FollowerProgress:
    """The follower's progress as the leader appends at `leader_log_end_offset` (its LEO before the append)."""
    if progress.log_end_offset != leader_log_end_offset:
        return progress
    return FollowerProgress(progress.log_end_offset, progress.last_fetch_ms,
                            progress.leader_log_end_offset_at_last_fetch, _later(progress.last_caught_up_ms, now_ms))


def is_out_of_sync(
    progress: FollowerProgress, *, leader_log_end_offset: int, now_ms: int, replica_lag_time_max_ms: int
) -> bool:
    if progress.log_end_offset == leader_log_end_offset:
        return False
    if progress.last_caught_up_ms is None:
        return True
    return now_ms - progress.last_caught_up_ms > replica_lag_time_max_ms


def may_rejoin_isr(progress: FollowerProgress, *, high_watermark: int, epoch_start_offset: int) -> bool:
    return progress.log_end_offset >= high_watermark and progress.log_end_offset >= epoch_start_offset


def _later(current_ms: int | None, candidate_ms: int) -> int:
    return candidate_ms if current_ms is None else max(current_ms, candidate_ms)
