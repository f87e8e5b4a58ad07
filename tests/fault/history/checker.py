"""The checker: pure functions from a history and the final logs to violations and a summary.

Rules, per partition (issue 39, section 2):

- lost: an acknowledged record is not at the offset it was acknowledged with in the final log;
- duplicated: a record (one producer's sequence number) is in the final log more than once;
- out of order: a producer's acknowledged records do not have offsets in the order it sent them;
- changed after read: an offset a consumer read holds another value in the final log (or is gone),
  or two reads of one offset disagree;
- replicas differ: an ISR member's log differs from the final log below the high watermark
  (`check_replicas`, given each replica's records read from its files);
- unavailability: the longest time the partition acknowledged no write while the load ran,
  measured from the fault's start to the next acknowledgement and between acknowledgements, and
  the time from the heal to the first acknowledgement after it.

A compacted topic (cleanup.policy=compact) drops records by design, so its history is judged by
`check_compacted`, against logs that also hold each record's key: an acknowledged record may be
gone from its offset when it is superseded (a later acknowledged record of its key is at a higher
offset) or is a tombstone sent at least delete.retention.ms before the read; otherwise it is lost.
What a log holds at an offset must still be what was acknowledged there, and the other rules stay.
Every replica's own files are judged alike, and two replicas holding one offset must agree on it
(`check_compacted_replicas`): each cleans on its own, so their logs differ in what they dropped only.
Tombstones have no value to tell their copies apart, so a duplicated tombstone goes unseen.

Sends that failed or stayed unanswered (indeterminate) may or may not be in the log: they count
as neither lost nor acknowledged, but a second copy of one is a duplicate all the same.
Every violation carries its evidence: the records involved.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

from .history import ClientError, Event, Fail, Indeterminate, Invoke, Mark, Ok, Read, record_value

TopicPartition = tuple[str, int]
Log = dict[int, bytes]  # offset -> value, the committed records of one partition
KeyedLog = dict[int, tuple[bytes | None, bytes | None]]  # offset -> (key, value): a compacted partition's records


@dataclass(frozen=True)
class Violation:
    rule: str  # lost | duplicated | out_of_order | changed_after_read | replicas_differ | client_error
    topic: str
    partition: int
    evidence: str
    acknowledged_at_s: float | None = None  # a lost record's acknowledgement

    def __str__(self) -> str:
        return f"{self.rule} in {self.topic}-{self.partition}: {self.evidence}"


@dataclass
class PartitionSummary:
    acknowledged: int = 0
    failed: int = 0
    indeterminate: int = 0
    unavailable_after_fault_s: float = 0.0
    unavailable_overall_s: float = 0.0
    resumed_after_heal_s: float = 0.0


@dataclass
class Report:
    partitions: dict[TopicPartition, PartitionSummary] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    def count(self, rule: str) -> int:
        return sum(1 for v in self.violations if v.rule == rule)

    @property
    def acknowledged(self) -> int:
        return sum(p.acknowledged for p in self.partitions.values())

    @property
    def unavailable_after_fault_s(self) -> float:
        return max((p.unavailable_after_fault_s for p in self.partitions.values()), default=0.0)

    @property
    def resumed_after_heal_s(self) -> float:
        return max((p.resumed_after_heal_s for p in self.partitions.values()), default=0.0)

    def slowest(self, what: str) -> tuple[TopicPartition | None, float]:
        """The partition with the largest `what` (a PartitionSummary field), and that value."""
        if not self.partitions:
            return None, 0.0
        tp = max(self.partitions, key=lambda k: getattr(self.partitions[k], what))
        return tp, getattr(self.partitions[tp], what)


def check(events: list[Event], final_logs: dict[TopicPartition, Log]) -> Report:
    """Judge a history against the final committed logs (every partition the workload wrote)."""
    report, acked = _tally(events, final_logs)
    for tp, log in final_logs.items():
        report.violations += check_lost(tp, acked[tp], log)
        report.violations += check_duplicates(tp, log)
        report.violations += check_order(tp, acked[tp])
    report.violations += check_reads(events, final_logs)
    _availabilities(report, events, acked)
    return report


@dataclass(frozen=True)
class Compaction:
    """What a compacted topic may have dropped by the time its log was read: `read_at_s` is the
    read's time on the history's clock, `delete_retention_s` the topic's delete.retention.ms."""
    delete_retention_s: float
    read_at_s: float


def check_compacted(events: list[Event], final_logs: dict[TopicPartition, KeyedLog],
                    compaction: Compaction) -> Report:
    """Judge the history of a compacted topic (its sends carry their keys) against logs read from
    it: a consumer's read or one replica's files."""
    report, acked = _tally(events, final_logs)
    may_be_gone = {tp: droppable(acked[tp], compaction) for tp in final_logs}
    values = {tp: {offset: value for offset, (_, value) in log.items()} for tp, log in final_logs.items()}
    for tp, log in final_logs.items():
        report.violations += check_kept(tp, acked[tp], log, may_be_gone[tp])
        report.violations += check_duplicates(tp, {o: v for o, v in values[tp].items() if v is not None})
        report.violations += check_order(tp, acked[tp])
    report.violations += check_reads(events, values, may_be_gone)
    _availabilities(report, events, acked)
    return report


def _tally(events: list[Event], final_logs: dict) -> tuple[Report, dict[TopicPartition, list[tuple[Invoke, Ok]]]]:
    """The summary's counts and client errors, and each partition's acknowledged sends in answer order."""
    report = Report()
    sends = {(e.producer, e.seq): e for e in events if isinstance(e, Invoke)}
    acked: dict[TopicPartition, list[tuple[Invoke, Ok]]] = defaultdict(list)
    for tp in final_logs:
        report.partitions[tp] = PartitionSummary()
    for event in events:
        if isinstance(event, (Ok, Fail, Indeterminate)):
            sent = sends[(event.producer, event.seq)]
            tp = (sent.topic, sent.partition)
            summary = report.partitions.setdefault(tp, PartitionSummary())
            if isinstance(event, Ok):
                summary.acknowledged += 1
                acked[tp].append((sent, event))
            elif isinstance(event, Fail):
                summary.failed += 1
            else:
                summary.indeterminate += 1
        elif isinstance(event, ClientError):
            report.violations.append(Violation("client_error", event.topic, -1,
                                               f"consumer {event.consumer} at {event.at_s:.3f}: {event.error}"))
    return report, acked


def _availabilities(report: Report, events: list[Event], acked: dict[TopicPartition, list[tuple[Invoke, Ok]]]) -> None:
    marks = {e.name: e.at_s for e in events if isinstance(e, Mark)}
    for tp, summary in report.partitions.items():
        _availability(summary, sorted(ok.at_s for _, ok in acked[tp]), marks)


def droppable(acked: list[tuple[Invoke, Ok]], compaction: Compaction) -> dict[int, str]:
    """offset -> why a compacted log may no longer hold the acknowledged record there."""
    latest: dict[bytes, int] = {}
    for sent, ok in acked:
        if sent.key is not None:
            latest[sent.key] = max(latest.get(sent.key, -1), ok.offset)
    out = {}
    for sent, ok in acked:
        if sent.key is not None and ok.offset < latest[sent.key]:
            out[ok.offset] = f"superseded at offset {latest[sent.key]}"
        elif sent.tombstone and compaction.read_at_s - sent.at_s >= compaction.delete_retention_s:
            out[ok.offset] = "a tombstone past delete.retention.ms"
    return out


def check_kept(tp: TopicPartition, acked: list[tuple[Invoke, Ok]], log: KeyedLog,
               may_be_gone: dict[int, str]) -> list[Violation]:
    """Every acknowledged record is at its offset with its key, unless compaction may have dropped it."""
    out = []
    for sent, ok in acked:
        expected = (sent.key, None if sent.tombstone else record_value(sent.producer, sent.seq))
        found = log.get(ok.offset)
        if found == expected or (found is None and ok.offset in may_be_gone):
            continue
        kind = "tombstone" if sent.tombstone else repr(expected[1])
        out.append(Violation("lost", *tp, f"{kind} of key {sent.key!r} acknowledged at offset {ok.offset} (at "
                                          f"{ok.at_s:.3f}), neither superseded nor an expired tombstone; the "
                                          f"log holds {found!r} there", ok.at_s))
    return out


def check_compacted_replicas(tp: TopicPartition, replica_logs: dict[int, KeyedLog]) -> list[Violation]:
    """Replicas of a compacted partition (by broker id) hold the same record at every offset that
    two of them hold: offsets are never reused, whatever each replica's cleaner dropped."""
    out = []
    brokers = sorted(replica_logs)
    for i, first in enumerate(brokers):
        for second in brokers[i + 1:]:
            a, b = replica_logs[first], replica_logs[second]
            offsets = sorted(o for o in a.keys() & b.keys() if a[o] != b[o])
            if offsets:
                shown = ", ".join(f"{o}: {a[o]!r} vs {b[o]!r}" for o in offsets[:5])
                out.append(Violation("replicas_differ", *tp, f"brokers {first} and {second} hold different "
                                                             f"records at {len(offsets)} offsets ({shown})"))
    return out


def check_lost(tp: TopicPartition, acked: list[tuple[Invoke, Ok]], log: Log) -> list[Violation]:
    out = []
    for sent, ok in acked:
        expected = record_value(sent.producer, sent.seq)
        found = log.get(ok.offset)
        if found != expected:
            where = [o for o, v in log.items() if v == expected]
            out.append(Violation("lost", *tp, f"{expected!r} acknowledged at offset {ok.offset} (at "
                                              f"{ok.at_s:.3f}); the final log holds {found!r} there"
                                              + (f" and the record at {where}" if where else ""), ok.at_s))
    return out


def check_duplicates(tp: TopicPartition, log: Log) -> list[Violation]:
    offsets: dict[bytes, list[int]] = defaultdict(list)
    for offset, value in sorted(log.items()):
        offsets[value].append(offset)
    return [Violation("duplicated", *tp, f"{value!r} at offsets {found}")
            for value, found in offsets.items() if len(found) > 1]


def check_order(tp: TopicPartition, acked: list[tuple[Invoke, Ok]]) -> list[Violation]:
    out = []
    by_producer: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for sent, ok in acked:
        by_producer[sent.producer].append((sent.seq, ok.offset))
    for producer, pairs in by_producer.items():
        pairs.sort()
        for (seq_a, offset_a), (seq_b, offset_b) in zip(pairs, pairs[1:]):
            if offset_b <= offset_a:
                out.append(Violation("out_of_order", *tp, f"producer {producer}: seq {seq_a} at offset {offset_a} "
                                                          f"but the later seq {seq_b} at offset {offset_b}"))
    return out


def check_reads(events: list[Event], final_logs: dict[TopicPartition, Log],
                may_be_gone: dict[TopicPartition, dict[int, str]] | None = None) -> list[Violation]:
    """`may_be_gone`: offsets a compacted log may have dropped since they were read (`droppable`)."""
    out = []
    first_read: dict[tuple[str, int, int], Read] = {}
    for read in (e for e in events if isinstance(e, Read)):
        tp = (read.topic, read.partition)
        key = (read.topic, read.partition, read.offset)
        earlier = first_read.setdefault(key, read)
        if earlier.value != read.value:
            out.append(Violation("changed_after_read", *tp, f"offset {read.offset} read as {earlier.value!r} by "
                                                            f"consumer {earlier.consumer} at {earlier.at_s:.3f}, "
                                                            f"then as {read.value!r} by consumer {read.consumer} "
                                                            f"at {read.at_s:.3f}"))
            continue
        final = final_logs.get(tp, {}).get(read.offset)
        dropped = read.offset not in final_logs.get(tp, {}) and read.offset in (may_be_gone or {}).get(tp, {})
        if final != read.value and earlier is read and not dropped:
            out.append(Violation("changed_after_read", *tp, f"offset {read.offset} read as {read.value!r} by "
                                                            f"consumer {read.consumer} at {read.at_s:.3f}; the "
                                                            f"final log holds {final!r}"))
    return out


def log_digest(log: Log, high_watermark: int) -> str:
    """A digest of the records below the HW: the final logs of a long run are kept as digests only."""
    digest = hashlib.sha256()
    for offset in range(high_watermark):
        digest.update(b"%d:%d:" % (offset, len(log.get(offset, b""))) + log.get(offset, b"<missing>"))
    return digest.hexdigest()


def check_replicas(tp: TopicPartition, high_watermark: int, final_digest: str,
                   replica_logs: dict[int, Log]) -> list[Violation]:
    """Every ISR member's log (`replica_logs`, by broker id) holds below the HW what a consumer read
    (`final_digest`, `log_digest` of the final log). The evidence compares a differing replica with
    one that matches, when there is one."""
    differing = {b for b, log in replica_logs.items() if log_digest(log, high_watermark) != final_digest}
    matching = sorted(set(replica_logs) - differing)
    out = []
    for broker in sorted(differing):
        log = replica_logs[broker]
        if matching:
            reference = replica_logs[matching[0]]
            offsets = [o for o in range(high_watermark) if log.get(o) != reference.get(o)]
            shown = ", ".join(f"{o}: {log.get(o)!r} vs {reference.get(o)!r}" for o in offsets[:5])
            detail = f"at {len(offsets)} offsets, against broker {matching[0]} ({shown})"
        else:
            detail = f"and so do all the others; it holds {len(log)} records below the HW"
        out.append(Violation("replicas_differ", *tp, f"broker {broker} differs from what the consumer read "
                                                     f"below the HW {high_watermark} {detail}"))
    return out


def _availability(summary: PartitionSummary, ok_times: list[float], marks: dict[str, float]) -> None:
    start, end = marks.get("load_start"), marks.get("load_stop")
    if start is None or end is None:
        return
    summary.unavailable_overall_s = longest_gap(ok_times, start, end)
    fault = marks.get("fault")
    if fault is not None:
        summary.unavailable_after_fault_s = longest_gap(ok_times, fault, end)
    heal = marks.get("heal")
    if heal is not None:
        after = [t for t in ok_times if t >= heal]
        summary.resumed_after_heal_s = (after[0] if after else end) - heal


def longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest stretch of [start, end] with no time in `times` (sorted)."""
    points = [start, *(t for t in times if start < t < end), end]
    return max(b - a for a, b in zip(points, points[1:]))


HEADER = ("fault", "target", "acknowledged", "lost", "duplicated", "changed after read", "max unavailable s")


def summary_row(fault: str, target: str, report: Report) -> tuple[str, ...]:
    return (fault, target, str(report.acknowledged), str(report.count("lost")), str(report.count("duplicated")),
            str(report.count("changed_after_read")), f"{report.unavailable_after_fault_s:.2f}")


def format_table(rows: list[tuple[str, ...]]) -> str:
    """The summary as a Markdown table (readable in a terminal, pasteable into a note)."""
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(HEADER), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def evidence(report: Report, limit: int = 20) -> str:
    lines = [str(v) for v in report.violations[:limit]]
    if len(report.violations) > limit:
        lines.append(f"... and {len(report.violations) - limit} more")
    return "\n".join(lines)
