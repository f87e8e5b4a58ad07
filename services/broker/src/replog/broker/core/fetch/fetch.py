"""Consumer fetch: what may be read, and when a long-poll may answer.

Theory of operation (docs/architecture.md, "High watermark and ISR", "Consume"; seed v2:
"Only messages up to the HW are exposed to the reader"):

`plan_consumer_fetch` checks, in order: this replica leads (NOT_LEADER); the
client's leader epoch, unless -1 (FENCED / UNKNOWN_LEADER_EPOCH); the offset is
within [log start, LEO] (OFFSET_OUT_OF_RANGE). It then allows reading
[fetch_offset, HW): records past the HW are not committed and not exposed, so
an offset between HW and LEO gives an empty read, not an error.

A long-poll answers when the readable bytes reach `min_bytes`, when its
deadline passes, or at once when the partition changed under it (leadership
lost): `DelayedFetch` is the purgatory op for that, reading the current state
through a probe the adapter supplies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import check_leader_epoch


@dataclass(frozen=True)
class ConsumerRead:
    """Read records in [fetch_offset, read_upto_offset); empty when they are equal."""

    fetch_offset: int
    read_upto_offset: int
    high_watermark: int
    log_start_offset: int

    @property
    def is_empty(self) -> bool:
        return self.read_upto_offset <= self.fetch_offset


def plan_consumer_fetch(
    *,
    is_leader: bool,
    leader_epoch: int,
    current_leader_epoch: int,
    fetch_offset: int,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
) -> ConsumerRead | Refusal:
    assert log_start_offset <= log_end_offset and high_watermark <= log_end_offset
    if not is_leader:
        return Refusal(ErrorCode.NOT_LEADER, "this broker does not lead the partition")
    refusal = check_leader_epoch(current_leader_epoch, leader_epoch, unset_allowed=True)
    if refusal is not None:
        return refusal
    if not log_start_offset <= fetch_offset <= log_end_offset:
        return Refusal(
            ErrorCode.OFFSET_OUT_OF_RANGE,
            f"fetch offset {fetch_offset} outside [{log_start_offset}, {log_end_offset}]",
        )
    return ConsumerRead(
        fetch_offset=fetch_offset,
        read_upto_offset=max(fetch_offset, high_watermark),
        high_watermark=high_watermark,
        log_start_offset=log_start_offset,
    )


def long_poll_ready(*, available_bytes: int, min_bytes: int, now_ms: int, deadline_ms: int) -> bool:
    """A fetch answers when enough bytes are readable or its wait is over."""
    return available_bytes >= min_bytes or now_ms >= deadline_ms


@dataclass(frozen=True)
class FetchProbe:
    """The current state of a parked fetch, read by the adapter's probe."""

    available_bytes: int
    partition_changed: bool  # leadership or epoch changed, offset now out of range, ...


class DelayedFetch:
    """A purgatory op for a long-poll fetch (consumer or follower)."""

    def __init__(self, *, min_bytes: int, probe: Callable[[], FetchProbe]) -> None:
        self._min_bytes = min_bytes
        self._probe = probe
        self.expired = False
        self.completed = False

    def try_complete(self, changed: object = None) -> bool:
        probe = self._probe()
        if probe.partition_changed or probe.available_bytes >= self._min_bytes:
            self.completed = True
        return self.completed

    def on_expire(self) -> None:
        self.expired = True
