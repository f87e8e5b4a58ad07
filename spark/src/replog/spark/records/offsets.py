"""Offset ranges of the records source: what to read, decided on the driver, with no I/O here.

The options follow Spark's Kafka source. ``startingOffsets`` / ``endingOffsets`` are
``earliest``, ``latest``, or JSON naming offsets per topic and partition,
``{"orders": {"0": 23, "1": -2}}``, where -2 means earliest and -1 latest (a partition the
JSON leaves out takes the default: earliest to start, latest to end). "latest" is a partition's
high watermark at planning time (ListOffsets LATEST answers the HW), so a read takes exactly the
records committed when it was planned, and a re-run of the same plan reads the same records.

Timestamps, as in Spark's Kafka source: ``startingTimestamp`` / ``endingTimestamp`` (milliseconds, every
partition) or ``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp`` (the same JSON with
timestamps for offsets; a partition it leaves out takes the offsets option's value). A timestamp stands
for the first offset whose record is stamped at or after it; when no record is, the high watermark
(nothing to read there yet). Timestamp options take precedence over the offsets options.

A range is [start, end) of one topic partition; a big one is split into pieces of at most
``maxRecordsPerPartition`` offsets, so one Spark task reads one piece. Pieces are a pure function
of the ranges, which is what lets a streaming micro-batch replayed from its checkpoint read what
it read the first time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

EARLIEST = "earliest"
LATEST = "latest"
EARLIEST_MARK = -2  # in the JSON form, as Spark's Kafka source spells it
LATEST_MARK = -1

# {topic: {partition: offset}}, the checkpointed form of a streaming offset (JSON keys are strings)
Offsets = dict[str, dict[str, int]]


class OffsetsError(ValueError):
    """An option naming offsets that cannot be read."""


@dataclass(frozen=True)
class Bounds:
    """Where a partition's log starts and its high watermark, when planned."""

    log_start: int
    high_watermark: int


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int  # exclusive

    @property
    def count(self) -> int:
        return self.end - self.start


def parse_spec(text: str | None, default: str, option: str) -> str | Offsets:
    """``earliest`` / ``latest`` / the per-partition JSON, as given in ``option``."""
    if text is None or not text.strip():
        return default
    text = text.strip()
    if text.lower() in (EARLIEST, LATEST):
        return text.lower()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        raise OffsetsError(f"{option}: expected earliest, latest or JSON like "
                           f'{{"topic": {{"0": 23}}}}, not {text!r}') from None
    if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
        raise OffsetsError(f'{option}: the JSON maps topics to {{"partition": offset}}, not {text!r}')
    out: Offsets = {}
    for topic, partitions in parsed.items():
        out[topic] = {}
        for partition, offset in partitions.items():
            if not str(partition).isdigit() or not isinstance(offset, int) or isinstance(offset, bool) \
                    or offset < EARLIEST_MARK:
                raise OffsetsError(f"{option}: {topic} partition {partition!r} offset {offset!r}: expected a "
                                   f"partition number and an offset (or -2 earliest, -1 latest)")
            out[topic][str(int(partition))] = offset
    return out


def parse_timestamps(single: str | None, by_partition: str | None, option: str) -> int | Offsets | None:
    """``<option>OffsetsByTimestamp`` (JSON) if given, else ``<option>Timestamp`` (one for every
    partition), else None."""
    if by_partition is not None and by_partition.strip():
        spec = parse_spec(by_partition, EARLIEST, f"{option}OffsetsByTimestamp")
        if not isinstance(spec, dict) or any(t < 0 for parts in spec.values() for t in parts.values()):
            raise OffsetsError(f'{option}OffsetsByTimestamp: expected JSON like {{"topic": {{"0": 1700000000000}}}} '
                               f"with timestamps in milliseconds, not {by_partition!r}")
        return spec
    if single is None or not str(single).strip():
        return None
    text = str(single).strip()
    if not text.isdigit():
        raise OffsetsError(f"{option}Timestamp: expected milliseconds since the epoch, not {single!r}")
    return int(text)


def timestamp_targets(spec: int | Offsets, bounds: Mapping[tuple[str, int], Bounds],
                      option: str) -> dict[tuple[str, int], int]:
    """The timestamp each partition of ``bounds`` starts (or ends) at, for those ``spec`` names."""
    if isinstance(spec, int):
        return {key: spec for key in bounds}
    out = {}
    for topic, partitions in spec.items():
        for partition, stamp in partitions.items():
            if (topic, int(partition)) not in bounds:
                raise OffsetsError(f"{option}: {topic} partition {partition} is not read (not subscribed, "
                                   f"or no such partition)")
            out[(topic, int(partition))] = stamp
    return out


def at_times(found: Mapping[tuple[str, int], int | None],
             bounds: Mapping[tuple[str, int], Bounds]) -> dict[tuple[str, int], int]:
    """The offsets ListOffsets by timestamp ``found`` (None: no record at or after the time), each held
    within its partition's log start and high watermark."""
    return {key: bounds[key].high_watermark if offset is None
            else min(max(offset, bounds[key].log_start), bounds[key].high_watermark)
            for key, offset in found.items()}


def resolve(spec: str | Offsets, bounds: Mapping[tuple[str, int], Bounds], default: str,
            option: str) -> dict[tuple[str, int], int]:
    """The offset of every partition in ``bounds`` that ``spec`` says."""
    named: Offsets = spec if isinstance(spec, dict) else {}
    for topic, partitions in named.items():
        for partition in partitions:
            if (topic, int(partition)) not in bounds:
                raise OffsetsError(f"{option}: {topic} partition {partition} is not read (not subscribed, "
                                   f"or no such partition)")
    out = {}
    for (topic, partition), bound in bounds.items():
        which = spec if isinstance(spec, str) else named.get(topic, {}).get(str(partition), default)
        if which in (EARLIEST, EARLIEST_MARK):
            out[(topic, partition)] = bound.log_start
        elif which in (LATEST, LATEST_MARK):
            out[(topic, partition)] = bound.high_watermark
        else:
            out[(topic, partition)] = which
    return out


def ranges(starts: Mapping[tuple[str, int], int], ends: Mapping[tuple[str, int], int],
           bounds: Mapping[tuple[str, int], Bounds]) -> list[OffsetRange]:
    """One range per partition, from its start to its end; an end past the high watermark is refused
    (those records do not exist yet, or are not committed), and so is a start after the end."""
    out = []
    for key in sorted(bounds):
        start, end = starts[key], ends[key]
        topic, partition = key
        if end > bounds[key].high_watermark:
            raise OffsetsError(f"endingOffsets: {topic}-{partition} ends at {end}, past its high watermark "
                               f"{bounds[key].high_watermark}")
        if start > end:
            raise OffsetsError(f"{topic}-{partition}: starting offset {start} is after the ending offset {end}")
        out.append(OffsetRange(topic, partition, start, end))
    return out


def split(offset_ranges: list[OffsetRange], records_per_piece_max: int) -> list[OffsetRange]:
    """Non-empty pieces of at most ``records_per_piece_max`` offsets, in order; they cover every range exactly."""
    assert records_per_piece_max > 0
    pieces = []
    for r in offset_ranges:
        for start in range(r.start, r.end, records_per_piece_max):
            pieces.append(OffsetRange(r.topic, r.partition, start, min(r.end, start + records_per_piece_max)))
    return pieces


def to_json_form(positions: Mapping[tuple[str, int], int]) -> Offsets:
    """Positions as a streaming offset (and Spark's Kafka-source JSON)."""
    out: Offsets = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def from_json_form(offsets: Offsets) -> dict[tuple[str, int], int]:
    return {(topic, int(partition)): offset for topic, partitions in offsets.items()
            for partition, offset in partitions.items()}


def capped(starts: Mapping[tuple[str, int], int], latest: Mapping[tuple[str, int], int],
           records_max: int | None) -> dict[tuple[str, int], int]:
    """A micro-batch's ends, one per partition of ``latest`` (each in ``starts`` too): its latest offset, or
    with ``records_max`` at most an equal share past its start, so the batch holds at most ``records_max``
    records. An end never moves below its start."""
    share = None if records_max is None or not latest else max(1, records_max // len(latest))
    out = {}
    for key, end in latest.items():
        start = starts[key]
        out[key] = start if end <= start else (end if share is None else min(end, start + share))
    return out
