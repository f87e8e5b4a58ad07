"""Errors a partition log raises for conditions a peer can cause.

A client asking for an offset the log does not hold, or a leader sending a
follower batches that do not continue its log, are conditions to answer with
an error code, not bugs: they get types here. A caller breaking the log's
contract (appending with a leader epoch older than the log's) is an `assert`.
Malformed batches raise `replog.common.records.CorruptRecordError` /
`RecordTooLargeError`, re-exported by the package.
"""

from __future__ import annotations


class LogError(Exception):
    """Base class of the partition log's errors."""


class OffsetOutOfRangeError(LogError):
    """A read below the log start offset or above the log end offset."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is out of range: the log holds [{log_start_offset}, {log_end_offset})"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class LogOffsetMismatchError(LogError):
    """Follower batches that do not continue the log exactly at its end offset."""


class CorruptLogError(LogError):
    """The log's own bytes at `offset` fail their check (a CRC, a torn or unreadable batch): bit rot or a
    damaged file found on a read. Nothing from there on is served; the caller answers an error and does
    not retry the same read."""

    def __init__(self, directory: object, offset: int, reason: str) -> None:
        super().__init__(f"{directory}: the log is corrupt at offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason
