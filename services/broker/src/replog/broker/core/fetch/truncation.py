"""Follower truncation to the last common leader epoch (KIP-101, KIP-279, KIP-320).

Theory of operation (docs/architecture.md, "Truncation by leader epoch"):

The seed's rule "truncate to the HW, then fetch" loses committed data (KIP-101
scenario 1: a follower truncates its HW-lagging tail, then is elected and the
old leader follows it) and lets logs diverge (scenario 2: after hard failures
two replicas hold different records at the same offset). Instead a follower
finds the last leader epoch it shares with the leader and keeps exactly the
records of that epoch that the leader also has.

Records of one leader epoch are written by one leader only, so two logs that
both hold epoch E agree on E's records up to the shorter end of E. The
follower asks about epoch A (first its latest epoch; the fetch path asks with
`last_fetched_epoch` implicitly). The leader answers `(E, end)`: the largest
epoch it has with E <= A and where E ends in its log.

- E == -1: the leader has no epoch <= A, so none of our records can be on the
  leader: truncate everything (to our log start offset).
- we hold E: keep E up to min(our end of E, the leader's end of E). Done.
- we do not hold E: our largest epoch e < E ends at our_end. Everything past
  our_end is in epochs in (E, A] that the leader lacks, so drop it, then ask
  again about e (KIP-279's loop; the asked epoch strictly decreases, so it ends).
- we hold no epoch <= E at all: nothing in common; truncate everything.

Never below the log start offset (records below it are gone locally anyway).
The HW is never used as a truncation point; the replica clamps its HW to the
new LEO afterwards (core/replica.py), which only matters after an unclean election.
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.log_view import NO_LEADER_EPOCH, EpochEndOffset, LogView, epoch_end_offset


@dataclass(frozen=True)
class TruncateTo:
    """Final: truncate the log to `offset` (no-op when it is the LEO), then fetch from there."""

    offset: int


@dataclass(frozen=True)
class AskLeaderForEpoch:
    """Not final: truncate to `truncate_to_offset`, then ask the leader about `leader_epoch`.

    Via OffsetForLeaderEpoch: send a request for `leader_epoch`. Via the fetch
    path: just fetch again; after the truncation our last epoch *is*
    `leader_epoch`, so the next fetch asks the question implicitly.
    """

    leader_epoch: int
    truncate_to_offset: int


TruncationDecision = TruncateTo | AskLeaderForEpoch


def first_truncation_step(log: LogView) -> TruncationDecision:
    """On becoming a follower via OffsetForLeaderEpoch: ask about our latest epoch."""
    latest = log.latest_epoch()
    if latest == NO_LEADER_EPOCH:
        return TruncateTo(log.log_end_offset)
    return AskLeaderForEpoch(leader_epoch=latest, truncate_to_offset=log.log_end_offset)


def on_leader_epoch_end(log: LogView, *, asked_epoch: int, answer: EpochEndOffset) -> TruncationDecision | Refusal:
    """The leader answered OffsetForLeaderEpoch(asked_epoch) with `answer`."""
    if answer.leader_epoch > asked_epoch:
        return Refusal(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"leader answered epoch {answer.leader_epoch} for a question about {asked_epoch}",
        )
    return _decide(log, answer)


def on_diverging_epoch(log: LogView, *, last_fetched_epoch: int, diverging: EpochEndOffset) -> TruncationDecision | Refusal:
    """A fetch response carried `diverging_epoch`: same rule, the question was our last fetched epoch."""
    return on_leader_epoch_end(log, asked_epoch=last_fetched_epoch, answer=diverging)


def _decide(log: LogView, answer: EpochEndOffset) -> TruncationDecision:
    if answer.is_undefined:
        return _truncate_all(log)
    ours = epoch_end_offset(log, answer.leader_epoch)
    if ours.is_undefined:
        return _truncate_all(log)
    if ours.leader_epoch == answer.leader_epoch:
        return TruncateTo(_clamp(log, min(ours.end_offset, answer.end_offset)))
    assert ours.leader_epoch < answer.leader_epoch, (ours, answer)
    return AskLeaderForEpoch(leader_epoch=ours.leader_epoch, truncate_to_offset=_clamp(log, ours.end_offset))


def _truncate_all(log: LogView) -> TruncateTo:
    return TruncateTo(log.log_start_offset)


def _clamp(log: LogView, offset: int) -> int:
    return max(log.log_start_offset, min(offset, log.log_end_offset))
