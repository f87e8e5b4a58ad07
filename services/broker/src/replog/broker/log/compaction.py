"""What the log cleaner keeps (pure; Kafka's log compaction, cleanup.policy=compact).

Theory of operation
-------------------
A compacted log is split at its *first dirty offset* (where the last cleaning
stopped; the log start before the first) into a clean part, whose records are
each the latest of their key as of that cleaning, and a dirty part. Only
rolled segments wholly below an upper offset (the HW) are ever touched, and
never a segment holding a record younger than `min_compaction_lag_ms`: the
*cleanable* segments end at the first that is not. `dirty_ratio` (dirty
bytes over all cleanable bytes) against `min_cleanable_dirty_ratio`, or a
dirty part older than `max_compaction_lag_ms`, says whether a log is due;
the cleaner takes the dirtiest due log first.

A pass builds `KeyOffsets`, each key's latest offset in a prefix of the dirty
part (whole segments, at most `keys_max` keys: the map's memory is bounded
by that, a larger dirty part takes several passes), then rewrites every
cleanable segment up to the end of that prefix. `keeps_record` decides each
record: a record whose key has a later offset in the map goes; a tombstone
(null value) that is the latest of its key goes once `delete_retention_ms`
has passed since its timestamp; a record without a key stays. Each idempotent
producer's latest batch (`producer_last_batches`) loses its records like any
other, but what it lost at its end stays as an empty batch (no record, the
original's last offset, producer id, epoch and sequence: record-format.md), so
the producer state rebuilt from the log after cleaning has that producer's last
sequence and offset, as Kafka keeps it. A retry of that very batch is then
refused as out of sequence rather than answered as a duplicate: its first
sequence is gone. Offsets never change: a kept record keeps its offset, so the
log has gaps where records went.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def key_digest(key: bytes) -> bytes:
    """16 bytes standing for a key in the map (a collision is as unlikely as MD5's, Kafka's choice)."""
    return hashlib.blake2b(key, digest_size=16).digest()


class KeyOffsets:
    """Each key's latest offset in a dirty prefix of the log, holding at most `keys_max` keys."""

    def __init__(self, keys_max: int) -> None:
        assert keys_max > 0, keys_max
        self.keys_max = keys_max
        self._latest: dict[bytes, int] = {}
        self.end_offset = -1  # offsets below this were mapped

    def __len__(self) -> int:
        return len(self._latest)

    def try_add_segment(self, records: Iterable[tuple[bytes | None, int]], next_offset: int) -> bool:
        """Map one segment's (key, offset) pairs, oldest first; False, with the map unchanged, when the map
        would then hold more than `keys_max` keys (but the first segment is always taken: a pass must
        make progress, and one segment bounds the memory anyway)."""
        staged: dict[bytes, int] = {}
        for key, offset in records:
            if key is not None:
                staged[key_digest(key)] = offset
        new_keys = sum(1 for digest in staged if digest not in self._latest)
        if self._latest and len(self._latest) + new_keys > self.keys_max:
            return False
        self._latest.update(staged)
        self.end_offset = next_offset
        return True

    def latest(self, key: bytes) -> int | None:
        return self._latest.get(key_digest(key))


@dataclass(frozen=True)
class CleanableSegment:
    base_offset: int
    next_offset: int
    size_bytes: int
    max_timestamp_ms: int


def cleanable_prefix(segments: Sequence[CleanableSegment], *, upper_offset: int, now_ms: int,
                     min_compaction_lag_ms: int) -> int:
    """How many of the oldest rolled `segments` (the active one left out by the caller) may be cleaned:
    wholly below `upper_offset`, none holding a record younger than the lag."""
    count = 0
    for segment in segments:
        if segment.next_offset > upper_offset or now_ms - segment.max_timestamp_ms < min_compaction_lag_ms:
            break
        count += 1
    return count


def dirty_ratio(segments: Sequence[CleanableSegment], first_dirty_offset: int) -> float:
    """Bytes of the cleanable `segments` at or above `first_dirty_offset` over all their bytes (0 when empty)."""
    total = sum(segment.size_bytes for segment in segments)
    dirty = sum(segment.size_bytes for segment in segments if segment.base_offset >= first_dirty_offset)
    return dirty / total if total else 0.0


def is_due(segments: Sequence[CleanableSegment], first_dirty_offset: int, *, now_ms: int,
           min_cleanable_dirty_ratio: float, max_compaction_lag_ms: int) -> bool:
    """Whether a log with these cleanable segments needs a pass: dirty enough, or its dirty part too old."""
    dirty = [segment for segment in segments if segment.base_offset >= first_dirty_offset]
    if not dirty:
        return False
    if dirty_ratio(segments, first_dirty_offset) >= min_cleanable_dirty_ratio:
        return True
    return now_ms - min(segment.max_timestamp_ms for segment in dirty) > max_compaction_lag_ms


def producer_last_batches(headers: Iterable[tuple[int, int]]) -> frozenset[int]:
    """Base offsets of the latest batch of each producer id, from (producer_id, base_offset) oldest first
    (producer id -1: no producer state, not kept for it)."""
    last: dict[int, int] = {}
    for producer_id, base_offset in headers:
        if producer_id >= 0:
            last[producer_id] = base_offset
    return frozenset(last.values())


def keeps_record(key: bytes | None, is_tombstone: bool, offset: int, timestamp_ms: int, offsets: KeyOffsets, *,
                 now_ms: int, delete_retention_ms: int) -> bool:
    """Whether a cleaned segment keeps this record (see the module docstring)."""
    if key is None:
        return True
    latest = offsets.latest(key)
    if latest is not None and latest > offset:
        return False
    return not (is_tombstone and now_ms - timestamp_ms > delete_retention_ms)


def kept_runs(offsets: Sequence[int]) -> list[tuple[int, int]]:
    """The kept offsets of one batch (ascending) as (start index, end index) runs of consecutive offsets:
    each run becomes one batch, so every batch still holds consecutive offsets."""
    runs: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(offsets) + 1):
        if i == len(offsets) or offsets[i] != offsets[i - 1] + 1:
            runs.append((start, i))
            start = i
    return runs if offsets else []
