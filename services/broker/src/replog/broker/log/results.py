"""What partition log operations report back: frozen values, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from replog.common.records import BatchHeader


class AppendInfo(NamedTuple):
    """Offsets and sizes of what one append wrote."""

    base_offset: int
    last_offset: int
    max_timestamp_ms: int
    record_count: int
    byte_size: int
    headers: tuple[BatchHeader, ...] = ()  # a follower append's batches, for its producer state


@dataclass(frozen=True)
class RecoveryReport:
    """What start-up recovery did.

    `segment` names the segment file whose tail was truncated (None when the
    log was clean), `bytes_dropped` counts everything removed (the tail plus
    any later segments), `reason` says why.
    """

    segment: str | None = None
    bytes_dropped: int = 0
    reason: str | None = None
    segments_scanned: tuple[str, ...] = ()
    batches_scanned: int = 0
    segments_deleted: tuple[str, ...] = ()
    indexes_rebuilt: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return self.bytes_dropped == 0


@dataclass(frozen=True)
class CorruptionReport:
    """One problem `PartitionLog.verify()` found: where, and what is wrong."""

    segment: str
    position: int
    reason: str
