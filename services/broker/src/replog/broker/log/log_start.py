"""The log start offset of a partition log, and what moves it up (part of `PartitionLog`).

Theory of operation (docs/architecture.md, "Storage"; Kafka's logStartOffset, KIP-107):

The log start is the first offset a consumer or follower may read. Three
things raise it, never lower it (only a truncation below it, or a restart of
the whole log, does): retention (`delete_old_segments`, by time and size,
whole segments below `upper_offset`, the HW; retention.py decides which),
DeleteRecords on a leader, and a follower taking its leader's start
(`advance_log_start_offset`, which may leave the start inside a segment). The
epoch cache forgets entries below it and the recovery point never stays below
it. The broker checkpoints the start (log-start-offset-checkpoint) and opens the
log with it again.

A mixin of `PartitionLog`, kept apart so that file stays about appends, reads
and durability: it uses the log's segments, epoch cache and recovery point.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .retention import count_deletable_segments

logger = logging.getLogger(__name__)


class LogStart:
    def advance_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords, or a follower following its leader: records below `offset` (<= LEO) become
        unreadable, and segments wholly below it are deleted. False when the start is already there."""
        self._assert_open()
        assert offset <= self.log_end_offset, (offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return False
        doomed = self._segments.advance_start(offset)
        self._after_start_moved()
        # debug: a follower moves its start after every move of its leader's, thousands in one retention pass
        logger.debug("%s: log start moved to %d (%d segments deleted)", self.directory, offset, len(doomed))
        return True

    @property
    def has_set_aside_files(self) -> bool:
        """Deleted segments' files wait for `take_set_aside_files` (LogConfig.remove_deleted_at_once False)."""
        return self._segments.has_set_aside

    def take_set_aside_files(self) -> list[Path]:
        """The files of deleted segments, renamed aside, for the owner to remove without holding the log."""
        self._assert_open()
        return self._segments.take_set_aside()

    def _after_start_moved(self) -> None:
        if self._leader_epoch_cache.truncate_from_start(self.log_start_offset):
            self._checkpoint_leader_epoch_cache()
        self._recovery_point = max(self._recovery_point, self.log_start_offset)

    def delete_old_segments(self, now_ms: int, *, upper_offset: int | None = None) -> list[str]:
        """Apply retention (never the active segment, nothing at or above `upper_offset`), `now_ms`
        being wall-clock time (records' timestamps are). Returns the names of the deleted segment files.
        """
        self._assert_open()
        if not self.config.deletes or (self.config.retention_ms is None and self.config.retention_bytes is None):
            return []  # cleanup.policy=compact: only the cleaner removes records
        count = count_deletable_segments(
            self._segments.summaries(with_timestamps=self.config.retention_ms is not None),
            now_ms=now_ms,
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
            upper_offset=upper_offset,
        )
        if count == 0:
            return []
        doomed = self._segments.delete_oldest(count)
        self._after_start_moved()
        names = [segment.name for segment in doomed]
        # debug: RetentionRounds logs each round's sum (a line per partition was 10,000 a pass at that many)
        logger.debug("%s: retention deleted %d segments, log starts at %d", self.directory, count,
                     self.log_start_offset)
        return names
