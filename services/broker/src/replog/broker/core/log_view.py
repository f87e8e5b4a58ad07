"""What the core may read from a replica's log (`LogView`), and epoch values.

What it owns: the read-only protocol the replica core needs from the on-disk
log (`replog.broker.log.PartitionLog` satisfies it structurally; tests use an
in-memory fake). The core never appends or truncates; it returns decisions
(`TruncateTo`, `AssignLeaderEpochStart`, ...) that the adapter applies.

Semantics of `end_offset_for_epoch` (KIP-101, as the leader answers
OffsetForLeaderEpoch): for a requested epoch E return `(e, end)` where `e` is
the largest epoch in the log's epoch cache with `e <= E`, and `end` is the
start offset of the first epoch after `e`, or the log end offset when `e` is
the latest epoch. `(-1, -1)` when the cache holds no epoch `<= E`.

Invariants the core relies on (and asserts where it reads them):
`0 <= log_start_offset <= log_end_offset`; for a returned `(e, end)`,
`end <= log_end_offset`.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

NO_LEADER_EPOCH = -1
"""Leader epoch of an empty log, or an unknown epoch (wire value -1)."""

NO_OFFSET = -1
"""An offset not known (yet), e.g. a follower's LEO before its first fetch."""


class LogView(Protocol):
    """Read-only view of one replica's log (plain attributes or properties both satisfy it)."""

    @property
    def log_start_offset(self) -> int:
        """First offset still in the log."""
        ...

    @property
    def log_end_offset(self) -> int:
        """Offset the next appended record will get (LEO)."""
        ...

    def latest_epoch(self) -> int:
        """Leader epoch of the newest epoch-cache entry; -1 if none."""
        ...

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """KIP-101 lookup; see the module docstring."""
        ...


class EpochEndOffset(NamedTuple):
    """A leader epoch with the first offset after it (mirrors `replog.v1.EpochEndOffset`)."""

    leader_epoch: int
    end_offset: int

    @property
    def is_undefined(self) -> bool:
        return self.leader_epoch == NO_LEADER_EPOCH


UNDEFINED_EPOCH_END_OFFSET = EpochEndOffset(NO_LEADER_EPOCH, NO_OFFSET)


def epoch_end_offset(log: LogView, leader_epoch: int) -> EpochEndOffset:
    """`log.end_offset_for_epoch` as a value, with the protocol's invariants asserted."""
    found_epoch, end_offset = log.end_offset_for_epoch(leader_epoch)
    if found_epoch == NO_LEADER_EPOCH:
        assert end_offset == NO_OFFSET, (found_epoch, end_offset)
        return UNDEFINED_EPOCH_END_OFFSET
    assert found_epoch <= leader_epoch, (found_epoch, leader_epoch)
    assert end_offset <= log.log_end_offset, (end_offset, log.log_end_offset)
    return EpochEndOffset(found_epoch, end_offset)
