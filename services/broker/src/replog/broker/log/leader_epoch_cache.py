"""The leader-epoch cache of one partition: leader_epoch -> first offset written in it.

Theory of operation (KIP-101, KIP-279)
--------------------------------------
Each entry (leader_epoch, start_offset) says the first batch stamped with
that leader epoch starts at start_offset; the epoch's data ends where the
next entry starts, or at the log end offset for the latest one. A follower
that becomes follower asks the leader for the end offset of its own latest
leader epoch and truncates there, instead of to its high watermark, which
could lose committed data.

Invariants: leader epochs and start offsets both strictly increase, and
every start offset is inside [log_start_offset, log_end_offset). The log
keeps the second one by truncating the cache with itself.

This class is pure (no files); `PartitionLog` checkpoints `entries()` to
`leader-epoch-checkpoint` whenever a method reports a change.
"""

from __future__ import annotations

import bisect
import logging

logger = logging.getLogger(__name__)

UNDEFINED_LEADER_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self._leader_epochs: list[int] = []
        self._start_offsets: list[int] = []
        for leader_epoch, start_offset in entries or ():
            assert not self._leader_epochs or (
                leader_epoch > self._leader_epochs[-1] and start_offset > self._start_offsets[-1]
            ), f"leader epoch entries out of order at ({leader_epoch}, {start_offset})"
            self._leader_epochs.append(leader_epoch)
            self._start_offsets.append(start_offset)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._leader_epochs, self._start_offsets))

    def latest_epoch(self) -> int:
        return self._leader_epochs[-1] if self._leader_epochs else UNDEFINED_LEADER_EPOCH

    def assign(self, leader_epoch: int, start_offset: int) -> bool:
        """Record that `leader_epoch` starts at `start_offset` if it is newer than the latest.

        An unstamped batch (negative leader epoch) or one from the latest or
        an older leader epoch changes nothing. Returns whether the cache changed.
        """
        if leader_epoch < 0 or leader_epoch <= self.latest_epoch():
            if 0 <= leader_epoch < self.latest_epoch():
                logger.warning(
                    "ignoring leader epoch %d at offset %d: the latest is %d",
                    leader_epoch,
                    start_offset,
                    self.latest_epoch(),
                )
            return False
        # Entries at or past the new start offset describe data that is gone.
        keep = bisect.bisect_left(self._start_offsets, start_offset)
        del self._leader_epochs[keep:]
        del self._start_offsets[keep:]
        self._leader_epochs.append(leader_epoch)
        self._start_offsets.append(start_offset)
        return True

    def end_offset_for(self, leader_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest known leader epoch <= `leader_epoch`, the offset its data ends at).

        The end offset is the start of the next known epoch, or the log end
        offset when it is the latest. (-1, -1) when no known epoch is <= it.
        """
        i = bisect.bisect_right(self._leader_epochs, leader_epoch) - 1
        if i < 0:
            return UNDEFINED_LEADER_EPOCH, UNDEFINED_OFFSET
        if i + 1 < len(self._start_offsets):
            return self._leader_epochs[i], self._start_offsets[i + 1]
        return self._leader_epochs[i], log_end_offset

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs that start at or after `end_offset` (the log was cut there)."""
        keep = bisect.bisect_left(self._start_offsets, end_offset)
        if keep == len(self._start_offsets):
            return False
        del self._leader_epochs[keep:]
        del self._start_offsets[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at `start_offset`: the epoch in force there now starts there."""
        below = bisect.bisect_left(self._start_offsets, start_offset)
        if below == 0:
            return False
        starts_exactly = below < len(self._start_offsets) and self._start_offsets[below] == start_offset
        if starts_exactly:
            del self._leader_epochs[:below]
            del self._start_offsets[:below]
        else:
            del self._leader_epochs[: below - 1]
            del self._start_offsets[: below - 1]
            self._start_offsets[0] = start_offset
        return True

    def clear(self) -> bool:
        changed = bool(self._leader_epochs)
        self._leader_epochs.clear()
        self._start_offsets.clear()
        return changed
