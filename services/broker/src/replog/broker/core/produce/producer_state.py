"""Idempotent producer state of one partition (KIP-98).

Theory of operation (docs/architecture.md, "Produce"; Kafka `ProducerStateManager`):

Per producer id the partition keeps the producer epoch and the metadata of the
last `BATCHES_KEPT` (5) batches it wrote: first/last sequence, first/last
offset. `check` classifies an incoming batch before the leader appends it:

- unknown producer id: a batch starting at sequence 0 is a new producer ->
  Append; any other -> UNKNOWN_PRODUCER_ID.
- producer epoch older than held -> INVALID_PRODUCER_EPOCH (a fenced zombie).
- newer epoch: the producer was re-initialised; its sequence restarts at 0
  (else OUT_OF_ORDER_SEQUENCE_NUMBER).
- same epoch: a batch equal (first and last sequence) to a kept one is a
  retry -> Duplicate with the original offsets; one starting right after the
  last kept batch -> Append; anything else -> OUT_OF_ORDER_SEQUENCE_NUMBER.
Sequences run 0 .. 2^31-1 and wrap to 0.

`record` updates the state after an append; it is also how followers keep the
state while replicating, and how `rebuild_producer_state` replays batch
headers from the log (trusting the log: no sequence checks, only the
invariant that a producer's epoch never goes back in a log). Because every
replica can derive the state from its own log, a new leader after failover
knows every producer's last sequences, so a retry of a batch the old leader
committed is answered as a duplicate, not appended twice. After a truncation
the adapter rebuilds (from a snapshot at or below the truncation point, plus
replay), since truncated batches must be forgotten.

Bounded: at most `producer_ids_max` producers, and a producer is forgotten only
when the partition needs its room and only by time, never by count: a full
table forgets the producers whose last batch in this partition is older than
`producer_id_expiration_ms` (by the batches' own max timestamps, so a replay of
the log and the live table agree; Kafka's `producer.id.expiration.ms`), via
`expire(now_ms)`, which the adapter calls on a timer and as soon as a new
producer was refused. A table below the bound forgets no one: this client does
not reset a producer the broker forgot (Kafka's KIP-360), so a producer idle for
a day would otherwise see UNKNOWN_PRODUCER_ID on every later batch. A full table
with no idle producer to forget refuses the *new* producer's first batch with
PRODUCER_STATE_FULL instead of evicting anyone (a forgotten producer's retried
first batch would look new and be appended twice); every producer it knows keeps
writing. The adapter counts and logs these refusals.
Followers and replay record whatever the log holds (the log is the truth), so
only the leader's admission applies the bound.
`snapshot()` / `ProducerStateTable.restore()` convert to and from a plain dict
for checkpoint files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple

from replog.broker.core.errors import ErrorCode, Refusal

SEQUENCE_MAX = 2**31 - 1
BATCHES_KEPT = 5
NO_PRODUCER_ID = -1
SNAPSHOT_VERSION = 2
PRODUCER_IDS_MAX_DEFAULT = 10_000
PRODUCER_ID_EXPIRATION_MS_DEFAULT = 24 * 60 * 60 * 1000  # Kafka's producer.id.expiration.ms


class ProducerStateLimits(NamedTuple):
    """How many producers one partition tracks, and how long an idle one is remembered."""

    producer_ids_max: int = PRODUCER_IDS_MAX_DEFAULT
    producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT


def sequence_after(sequence: int, increment: int) -> int:
    """`sequence + increment`, wrapping past SEQUENCE_MAX to 0."""
    assert 0 <= sequence <= SEQUENCE_MAX and increment >= 0
    return (sequence + increment) % (SEQUENCE_MAX + 1)


@dataclass(frozen=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True)
class BatchHeader:
    """What replay needs from one batch in the log."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp_ms: int  # the batch's largest record timestamp: when the producer last wrote


@dataclass(frozen=True)
class Append:
    """Append the batch, then `record` it."""


@dataclass(frozen=True)
class Duplicate:
    """A retry of a batch already in the log: answer with its original offsets."""

    base_offset: int
    last_offset: int


SequenceCheck = Append | Duplicate | Refusal


@dataclass
class _ProducerEntry:
    producer_epoch: int
    last_timestamp_ms: int
    batches: list[BatchMetadata] = field(default_factory=list)


class ProducerStateTable:
    def __init__(self, limits: ProducerStateLimits = ProducerStateLimits()) -> None:
        assert limits.producer_ids_max > 0 and limits.producer_id_expiration_ms > 0, limits
        self.limits = limits
        self._producers: dict[int, _ProducerEntry] = {}
        self.full_refusals = 0  # new producers refused since the adapter last reported them (it resets this)

    def __len__(self) -> int:
        return len(self._producers)

    def producer_epoch(self, producer_id: int) -> int | None:
        entry = self._producers.get(producer_id)
        return None if entry is None else entry.producer_epoch

    def batches(self, producer_id: int) -> tuple[BatchMetadata, ...]:
        entry = self._producers.get(producer_id)
        return () if entry is None else tuple(entry.batches)

    def check(self, *, producer_id: int, producer_epoch: int, base_sequence: int, record_count: int) -> SequenceCheck:
        """Classify a batch a producer sent (before the leader appends it)."""
        if producer_id == NO_PRODUCER_ID:
            return Append()  # not an idempotent producer
        if producer_id < 0 or producer_epoch < 0 or record_count < 1 or not 0 <= base_sequence <= SEQUENCE_MAX:
            return Refusal(ErrorCode.INVALID_REQUEST, "malformed producer id, epoch, sequence or count")
        entry = self._producers.get(producer_id)
        if entry is None:
            if base_sequence != 0:
                return Refusal(ErrorCode.UNKNOWN_PRODUCER_ID,
                               f"producer {producer_id} unknown, sequence {base_sequence}")
            if len(self._producers) >= self.limits.producer_ids_max:
                self.full_refusals += 1
                return Refusal(ErrorCode.PRODUCER_STATE_FULL, (
                    f"this partition already tracks {len(self._producers)} idempotent producers (producer_ids_max "
                    f"{self.limits.producer_ids_max}); a new producer is refused until one has been idle for "
                    f"{self.limits.producer_id_expiration_ms} ms. Reuse producers rather than creating one per "
                    f"message"))
            return Append()
        if producer_epoch < entry.producer_epoch:
            return Refusal(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer epoch {producer_epoch} < current {entry.producer_epoch}",
            )
        if producer_epoch > entry.producer_epoch:
            return _starts_new_sequence(base_sequence, f"new producer epoch {producer_epoch}")
        return _check_same_epoch(entry, base_sequence, sequence_after(base_sequence, record_count - 1))

    def record(self, header: BatchHeader) -> None:
        """Remember an appended batch (leader after `check`, follower append, or replay)."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.producer_epoch:
            entry = _ProducerEntry(header.producer_epoch, header.max_timestamp_ms)
            self._producers[header.producer_id] = entry
        assert header.producer_epoch == entry.producer_epoch, "a producer's epoch never goes back in a log"
        assert header.base_offset <= header.last_offset, header
        entry.batches.append(
            BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset, header.last_offset)
        )
        del entry.batches[:-BATCHES_KEPT]
        entry.last_timestamp_ms = max(entry.last_timestamp_ms, header.max_timestamp_ms)

    def expire(self, now_ms: int) -> list[int]:
        """When the table is full: forget every producer whose last batch is `producer_id_expiration_ms` old
        or older at `now_ms` (wall-clock ms, the batches' timestamps' clock). The producer ids forgotten."""
        if len(self._producers) < self.limits.producer_ids_max:
            return []
        oldest_kept_ms = now_ms - self.limits.producer_id_expiration_ms
        expired = [pid for pid, entry in self._producers.items() if entry.last_timestamp_ms <= oldest_kept_ms]
        for producer_id in expired:
            del self._producers[producer_id]
        return expired

    def replay(self, headers: Iterable[BatchHeader]) -> None:
        for header in headers:
            self.record(header)

    def snapshot(self) -> dict[str, Any]:
        """A plain, JSON-ready dict; producers in the order they first wrote."""
        return {
            "version": SNAPSHOT_VERSION,
            "producers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": entry.producer_epoch,
                    "last_timestamp_ms": entry.last_timestamp_ms,
                    "batches": [
                        [b.first_sequence, b.last_sequence, b.first_offset, b.last_offset] for b in entry.batches
                    ],
                }
                for producer_id, entry in self._producers.items()
            ],
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any], limits: ProducerStateLimits = ProducerStateLimits()
                ) -> ProducerStateTable:
        """The table `snapshot()` described; nothing is forgotten here (call `expire`)."""
        if snapshot.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"unknown producer state snapshot version {snapshot.get('version')!r}")
        table = cls(limits)
        for producer in snapshot["producers"]:
            entry = _ProducerEntry(int(producer["producer_epoch"]), int(producer["last_timestamp_ms"]))
            entry.batches = [BatchMetadata(*(int(v) for v in batch)) for batch in producer["batches"]]
            table._producers[int(producer["producer_id"])] = entry
        return table


def rebuild_producer_state(
    headers: Iterable[BatchHeader], limits: ProducerStateLimits = ProducerStateLimits(), *,
    base: ProducerStateTable | None = None,
) -> ProducerStateTable:
    """Producer state from the log's batch headers in offset order (optionally on top of a snapshot).
    Nothing is forgotten while replaying: the caller expires the result against its clock."""
    table = base if base is not None else ProducerStateTable(limits)
    table.replay(headers)
    return table


def _check_same_epoch(entry: _ProducerEntry, base_sequence: int, last_sequence: int) -> SequenceCheck:
    for batch in entry.batches:
        if batch.first_sequence == base_sequence and batch.last_sequence == last_sequence:
            return Duplicate(batch.first_offset, batch.last_offset)
    if not entry.batches:
        return _starts_new_sequence(base_sequence, "no batch kept for this epoch")
    expected = sequence_after(entry.batches[-1].last_sequence, 1)
    if base_sequence == expected:
        return Append()
    return Refusal(
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, f"sequence {base_sequence}, expected {expected}"
    )


def _starts_new_sequence(base_sequence: int, why: str) -> SequenceCheck:
    if base_sequence == 0:
        return Append()
    return Refusal(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, f"{why} must start at sequence 0, not {base_sequence}")
