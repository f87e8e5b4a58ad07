"""The follower's side of fetching: where to fetch from, and its high watermark.

Theory of operation (docs/architecture.md, "High watermark and ISR"; seed v2 "Writes"; KIP-320):

A follower fetches at its log end offset and names the leader epoch of its
last record, so the leader can detect divergence (core/fetch/divergence.py) and the
follower can truncate safely (core/fetch/truncation.py) instead of to its HW.

Follower HW = min(leader's HW from the last consistent fetch response, own
LEO). It only moves forward: an earlier value came from an earlier leader's
HW, which is committed and stays committed. It is clamped to the LEO after a
truncation; that clamp only bites after an unclean election (a clean one
never truncates committed records).
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.log_view import LogView


class FetchPosition(NamedTuple):
    """What a follower puts in its ReplicaFetchPartition."""

    fetch_offset: int
    last_fetched_epoch: int


def fetch_position(log: LogView) -> FetchPosition:
    return FetchPosition(fetch_offset=log.log_end_offset, last_fetched_epoch=log.latest_epoch())


def follower_high_watermark(*, current: int, leader_high_watermark: int, log_end_offset: int) -> int:
    """The follower's HW after a consistent fetch response (records already appended)."""
    return min(max(current, min(leader_high_watermark, log_end_offset)), log_end_offset)
