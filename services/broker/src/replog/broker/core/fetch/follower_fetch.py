"""A follower's fetch as its leader sees it: whether the named position can be served, and the answer.

Theory of operation (KIP-101, KIP-320; docs/architecture.md, "Replication"):

`check_position` decides from the leader's log alone, in order: a position whose
last epoch the leader's log does not continue diverged (divergence.py: answer
the diverging epoch and no records, and count nothing of this follower towards
the HW); one outside [log start, LEO] is OFFSET_OUT_OF_RANGE; otherwise the
follower's log is a prefix of the leader's. `LeaderReplica.on_follower_fetch`
(core/leader.py) records a servable position and answers a `FollowerRead`.
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.fetch.divergence import find_divergence
from replog.broker.core.effects import NO_EFFECTS, Effects
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate
from replog.broker.core.isr.isr_proposal import AlterPartitionProposal
from replog.broker.core.log_view import EpochEndOffset, LogView


class FollowerRead(NamedTuple):
    """A consistent follower fetch: send records in [fetch_offset, read_upto_offset)."""

    fetch_offset: int
    read_upto_offset: int
    high_watermark: int
    log_start_offset: int
    leader_epoch: int
    high_watermark_update: HighWatermarkUpdate
    isr_proposal: AlterPartitionProposal | None
    effects: Effects = NO_EFFECTS


class DivergingEpoch(NamedTuple):
    """The follower's log diverged: answer `diverging` and no records (KIP-320)."""

    diverging: EpochEndOffset
    high_watermark: int
    log_start_offset: int
    leader_epoch: int


FollowerFetchResult = FollowerRead | DivergingEpoch | Refusal


def check_position(log: LogView, *, fetch_offset: int, last_fetched_epoch: int) -> EpochEndOffset | Refusal | None:
    """The diverging epoch to answer, a refusal of an offset out of range, or None: servable."""
    diverging = find_divergence(log, fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch)
    if diverging is not None:
        return diverging
    if not log.log_start_offset <= fetch_offset <= log.log_end_offset:
        return Refusal(
            ErrorCode.OFFSET_OUT_OF_RANGE,
            f"fetch offset {fetch_offset} outside [{log.log_start_offset}, {log.log_end_offset}]",
        )
    return None
