"""The leader's half of safe truncation: detecting a follower whose log diverged.

Theory of operation (KIP-101, KIP-320; docs/architecture.md, "Truncation by leader epoch"):

A follower fetches with its log end offset (`fetch_offset`) and the leader
epoch of its last record (`last_fetched_epoch`). Only one leader ever writes
records of a given epoch, so two logs that both hold epoch E hold the same
records of E up to the shorter one's end of E. The leader looks up
`end_offset_for_epoch(last_fetched_epoch) = (e, end)` in its own log:

- `e == last_fetched_epoch and end >= fetch_offset`: the follower's log is a
  prefix of the leader's; serve records from `fetch_offset`.
- otherwise the follower holds records the leader does not: answer with the
  diverging epoch `(e, end)`, serve nothing and record nothing about this
  follower (its LEO is not a prefix of ours, so it must not count for the HW).
  The follower truncates (truncation.py) and fetches again.

A follower with no epoch (`last_fetched_epoch == -1`, an empty log) cannot
diverge; the offset range check alone applies.
"""

from __future__ import annotations

from replog.broker.core.log_view import NO_LEADER_EPOCH, EpochEndOffset, LogView, epoch_end_offset


def find_divergence(log: LogView, *, fetch_offset: int, last_fetched_epoch: int) -> EpochEndOffset | None:
    """The diverging epoch to answer, or None when the follower's log is a prefix of ours."""
    if last_fetched_epoch == NO_LEADER_EPOCH:
        return None
    ours = epoch_end_offset(log, last_fetched_epoch)
    if ours.leader_epoch == last_fetched_epoch and ours.end_offset >= fetch_offset:
        return None
    return ours
