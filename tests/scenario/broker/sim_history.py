"""A schedule's clients as a history, judged by the fault matrix's own checker (tests/fault/history/).

At the end of a schedule, once every fault is healed and the logs converged, what the clients saw becomes
the checker's events: each record the client library reported delivered is a send answered ok at the offset
the client was told, each other acks=-1 answer heard likewise, each record the consumer read a read. The
converged log is the final log. The checker then asks what it asks of every fault-matrix cell: nothing
acknowledged lost or moved, no record twice, each producer's acknowledged records in the order it sent
them, nothing read that the final log does not hold. The simulation's own step-by-step checks
(sim_invariants.py) ask more, and sooner; this is the same judge for both kinds of test.

The checker names a record by its producer and sequence number (`history.record_value`), so the final log's
records are named that way: an idempotent record by its producer id and sequence, a plain produce's record
(one send, never retried) by its payload, as a producer numbered below 0, and its offset as the sequence:
payloads are drawn at random and two sends may draw the same one, so the payload alone would make two
records one. Simulated time has no load
marks, so the checker's availability figures stay empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.fault.history import checker
from tests.fault.history.history import Event, Invoke, Ok, Read, record_value
from tests.scenario.broker.sim_members import TP

if TYPE_CHECKING:
    from tests.scenario.broker.sim_cluster import SimCluster
    from tests.scenario.broker.sim_consumer import SimConsumer
    from tests.unit.broker.core.fake_log import FakeLog, FakeRecord

CONSUMER = 0


class _Names:
    """Each record's name for the checker; a plain payload is a producer of its own, numbered as first met."""

    def __init__(self) -> None:
        self.plain: dict[str, int] = {}

    def plain_producer(self, payload: str) -> int:
        return self.plain.setdefault(payload, -1 - len(self.plain))

    def of(self, record: FakeRecord) -> bytes:
        if record.producer_id >= 0:
            return record_value(record.producer_id, record.sequence)
        return record_value(self.plain_producer(record.payload), record.offset)


def judge(cluster: SimCluster, consumer: SimConsumer, log: FakeLog) -> None:
    """Fail when the checker finds a violation in what the clients saw against the converged `log`."""
    names = _Names()
    topic, partition = TP.topic, TP.partition
    events: list[Event] = []
    for delivery in cluster.delivered:
        events.append(Invoke(0.0, delivery.producer_id, delivery.sequence, topic, partition))
        events.append(Ok(0.0, delivery.producer_id, delivery.sequence, delivery.offset))
    # acks=-1 answers heard, the client library's requests among them: a retry answered as a duplicate
    # names the first one's offset again, and one answer is enough.
    told = {(d.producer_id, d.sequence, d.offset) for d in cluster.delivered}
    for ticket in cluster.acked:
        if ticket.producer_id >= 0:
            producer, seq = ticket.producer_id, ticket.sequence
        else:
            producer, seq = names.plain_producer(ticket.payload), ticket.base_offset
        if (producer, seq, ticket.base_offset) in told:
            continue
        told.add((producer, seq, ticket.base_offset))
        events.append(Invoke(0.0, producer, seq, topic, partition))
        events.append(Ok(0.0, producer, seq, ticket.base_offset))
    events += [Read(0.0, CONSUMER, topic, partition, r.offset, names.of(r)) for r in consumer.read]
    final = {r.offset: names.of(r) for r in log.records_between(log.log_start_offset, log.log_end_offset)}
    report = checker.check(events, {(topic, partition): final})
    assert not report.violations, f"the history checker: {checker.evidence(report)}"
