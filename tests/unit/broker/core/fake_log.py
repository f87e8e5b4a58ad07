"""An in-memory log for broker-core tests: records (offset, leader epoch, payload, producer header).

It satisfies `replog.broker.core.log_view.LogView` and `core.step_log.StepLog` (a
batch is one record: a payload to a leader's append, the records a leader's read
returned to a follower's; `max_bytes` of a read counts records), and keeps its
own leader-epoch cache (epoch -> start offset) the way the real log does: an
entry is added when a record of a newer epoch is appended or when a leader
assigns its epoch start, truncation drops entries starting at or past the
truncation point, and a moved log start re-anchors the epoch in force there.
`FAKE_PRODUCERS` reads its records' producers for the core's steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from replog.broker.core.produce.producer_state import (
    NO_PRODUCER_ID,
    BatchHeader,
    ProducerStateLimits,
    ProducerStateTable,
    rebuild_producer_state,
)


@dataclass(frozen=True)
class FakeRecord:
    offset: int
    leader_epoch: int
    payload: str
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    sequence: int = -1
    timestamp_ms: int = 0

    def header(self) -> BatchHeader:
        return BatchHeader(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.sequence,
            last_sequence=self.sequence,
            base_offset=self.offset,
            last_offset=self.offset,
            max_timestamp_ms=self.timestamp_ms,
        )


@dataclass(frozen=True)
class FakeBatchHeader:
    """A produced record's producer fields, as the leader's idempotence check reads them."""

    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = -1
    record_count: int = 1


class FakeAppendInfo(NamedTuple):
    base_offset: int
    last_offset: int


class FakeLog:
    def __init__(self, log_start_offset: int = 0) -> None:
        self.log_start_offset = log_start_offset
        self._records: list[FakeRecord] = []
        self._epoch_starts: list[tuple[int, int]] = []  # (leader_epoch, start_offset), ascending

    @classmethod
    def with_epochs(cls, *epochs: int) -> FakeLog:
        """A log whose record at offset i has leader epoch epochs[i]; payloads name offset and epoch."""
        log = cls()
        for epoch in epochs:
            log.append(epoch, f"r{log.log_end_offset}e{epoch}")
        return log

    # --- LogView ---------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.log_start_offset + len(self._records)

    def latest_epoch(self) -> int:
        return self._epoch_starts[-1][0] if self._epoch_starts else -1

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        found = -1
        end = -1
        for index, (epoch, _start) in enumerate(self._epoch_starts):
            if epoch > leader_epoch:
                break
            found = epoch
            following = self._epoch_starts[index + 1 :]
            end = following[0][1] if following else self.log_end_offset
        return found, end

    # --- writes (what the adapter does with the core's decisions) ----------------

    def append(
        self,
        leader_epoch: int,
        payload: str,
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
        sequence: int = -1,
    ) -> int:
        offset = self.log_end_offset
        self.append_copy(FakeRecord(offset, leader_epoch, payload, producer_id, producer_epoch, sequence))
        return offset

    def append_copy(self, record: FakeRecord) -> None:
        """Append a record replicated from a leader (same offset, epoch and payload)."""
        assert record.offset == self.log_end_offset, (record.offset, self.log_end_offset)
        assert record.leader_epoch >= self.latest_epoch(), "epochs never go back within a log"
        self.assign_epoch(record.leader_epoch)
        self._records.append(record)

    def assign_epoch(self, leader_epoch: int) -> None:
        """Record that `leader_epoch` starts at the current log end (no-op if already latest)."""
        if leader_epoch > self.latest_epoch():
            self._epoch_starts.append((leader_epoch, self.log_end_offset))
        else:
            assert leader_epoch == self.latest_epoch(), (leader_epoch, self.latest_epoch())

    def truncate_to(self, offset: int) -> None:
        assert self.log_start_offset <= offset <= self.log_end_offset, (offset, self.log_start_offset)
        del self._records[offset - self.log_start_offset :]
        self._epoch_starts = [(e, s) for e, s in self._epoch_starts if s < offset]

    # --- StepLog (core/step_log.py) ----------------------------------------------

    def append_as_leader(self, batch: str, leader_epoch: int, *, fsync: bool,
                         validated: FakeBatchHeader) -> FakeAppendInfo:
        offset = self.append(leader_epoch, batch, producer_id=validated.producer_id,
                             producer_epoch=validated.producer_epoch, sequence=validated.base_sequence)
        return FakeAppendInfo(offset, offset)

    def append_as_follower(self, batches: list[FakeRecord], *, fsync: bool) -> list[FakeRecord] | None:
        if not batches:
            return None
        for record in batches:
            self.append_copy(record)
        return list(batches)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._records = []
        self._epoch_starts = []
        self.log_start_offset = offset

    def advance_log_start_offset(self, offset: int) -> bool:
        assert offset <= self.log_end_offset, (offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return False
        del self._records[: offset - self.log_start_offset]
        self.log_start_offset = offset
        in_force = [(e, s) for e, s in self._epoch_starts if s <= offset][-1:]
        self._epoch_starts = [(e, offset) for e, _ in in_force] + [(e, s) for e, s in self._epoch_starts if s > offset]
        return True

    def read(self, start_offset: int, max_bytes: int, upper_offset: int | None = None) -> list[FakeRecord]:
        """At most `max_bytes` records from `start_offset`, below `upper_offset` (the LEO by default)."""
        upto_offset = self.log_end_offset if upper_offset is None else upper_offset
        return self.records_between(start_offset, min(upto_offset, start_offset + max_bytes))

    # --- reads -------------------------------------------------------------------

    def records_between(self, from_offset: int, upto_offset: int) -> list[FakeRecord]:
        start = from_offset - self.log_start_offset
        return self._records[start : upto_offset - self.log_start_offset]

    def record_at(self, offset: int) -> FakeRecord:
        return self._records[offset - self.log_start_offset]

    def payloads(self) -> list[str]:
        return [r.payload for r in self._records]

    def epochs(self) -> list[int]:
        return [r.leader_epoch for r in self._records]

    def headers(self) -> list[BatchHeader]:
        return [r.header() for r in self._records if r.producer_id != NO_PRODUCER_ID]


class _FakeProducers:
    """`core.step_log.ProducerBatches` for FakeLog's records."""

    def stored(self, header: FakeBatchHeader, base_offset: int) -> BatchHeader | None:
        if header.producer_id == NO_PRODUCER_ID:
            return None
        return BatchHeader(
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            last_sequence=header.base_sequence,
            base_offset=base_offset,
            last_offset=base_offset,
            max_timestamp_ms=0,
        )

    def replicated(self, appended: list[FakeRecord]) -> list[BatchHeader]:
        return [record.header() for record in appended]

    def written_below(self, batches: list[FakeRecord], first_offset: int, end_offset: int) -> list[BatchHeader]:
        return [record.header() for record in batches if first_offset <= record.offset < end_offset]

    def rebuild(self, log: FakeLog, limits: ProducerStateLimits) -> ProducerStateTable:
        return rebuild_producer_state(log.headers(), limits)


FAKE_PRODUCERS = _FakeProducers()
