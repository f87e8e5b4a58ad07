"""What must hold in the simulated cluster after every step, checked against its recorded truth.

- a live replica's HW is within its log, and everything below it is committed;
- every live ISR member, and every live eligible leader replica, holds every committed record;
- every record acknowledged to an acks=-1 producer is committed;
- no idempotent batch is committed twice, and each producer's batches are committed in sequence order,
  one after the other from sequence 0 (the leader appends sequence n+1 only after n);
- no record of the simulation's idempotent producers (sim_producer.py: a payload is one record, and a
  retry sends the same payload with the same sequence) is committed twice, under any sequence;
- every record the client library reported delivered (`cluster.delivered`) is the committed record at
  the offset the client was told, with its producer id and sequence.

The checks run after every step of every schedule, so each looks only at what changed since it
last passed. This is exact, not a sample: the truth only grows (`committed` and `acked` are
append-only, a committed offset never changes its record), and a log changes below its end only by
truncation, which lowers the log's `verified_end` (sim_members.DiskLog): the offset below which its
records were found equal to the committed ones.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from replog.broker.core.partition import ReplicaRole

if TYPE_CHECKING:
    from tests.scenario.broker.sim_cluster import SimCluster
    from tests.scenario.broker.sim_members import SimBroker


class TruthChecked:
    """How much of the cluster's append-only truth the checks have gone through already."""

    __slots__ = ("acked", "committed", "delivered", "last_sequences", "payloads", "sequences")

    def __init__(self) -> None:
        self.acked = 0  # tickets of `cluster.acked` found committed
        self.delivered = 0  # entries of `cluster.delivered` found committed
        self.committed = 0  # entries of `cluster.committed` (in insertion order) whose sequence was noted
        self.sequences: set[tuple[int, int]] = set()  # (producer id, sequence) of the committed idempotent batches
        self.last_sequences: dict[int, int] = {}  # producer id -> the sequence of its last committed batch
        self.payloads: set[str] = set()  # payloads of the committed idempotent batches


def check_invariants(cluster: SimCluster) -> None:
    committed = cluster.committed
    for broker in cluster.brokers.values():
        if not broker.alive:
            continue
        if broker.role is ReplicaRole.LEADER:
            cluster.note_leader(broker)
        hw = broker.replica.high_watermark
        assert hw <= broker.log.log_end_offset, f"broker {broker.broker_id}: HW {hw} > LEO"
        _verify_up_to(cluster, broker, hw, "below HW")
    _check_isr_members_hold_committed(cluster)
    checked = cluster.truth_checked
    acked = cluster.acked
    for ticket in islice(acked, checked.acked, None):
        record = committed.get(ticket.base_offset)
        assert record is not None and record.payload == ticket.payload, f"acked {ticket.payload} not committed"
    checked.acked = len(acked)
    if len(committed) > checked.committed:
        _check_idempotent_batches(checked, islice(committed.values(), checked.committed, None))
        checked.committed = len(committed)
    delivered = cluster.delivered
    for delivery in islice(delivered, checked.delivered, None):
        record = committed.get(delivery.offset)
        assert (record is not None and record.payload == delivery.payload
                and (record.producer_id, record.sequence) == (delivery.producer_id, delivery.sequence)), (
            f"the client reported {delivery} delivered; committed at that offset is {record}")
    checked.delivered = len(delivered)


def _check_idempotent_batches(checked: TruthChecked, records) -> None:
    """Newly committed records (in offset order: the truth grows at its end): idempotent batches once each,
    each producer's in sequence order."""
    for record in records:
        producer_id = record.producer_id
        if producer_id == -1:
            continue
        key = (producer_id, record.sequence)
        assert key not in checked.sequences, "an idempotent batch was committed twice"
        checked.sequences.add(key)
        assert record.payload not in checked.payloads, f"record {record.payload} committed twice"
        checked.payloads.add(record.payload)
        expected = checked.last_sequences.get(producer_id, -1) + 1
        assert record.sequence == expected, (
            f"producer {producer_id}: sequence {record.sequence} committed at {record.offset}, expected {expected}")
        checked.last_sequences[producer_id] = record.sequence


def _verify_up_to(cluster: SimCluster, broker: SimBroker, upto: int, where: str) -> None:
    """Every record of the broker's log below `upto` is the committed one at its offset."""
    log = broker.log
    start = max(log.verified_end, log.log_start_offset)
    if upto <= start:
        return
    committed = cluster.committed
    for record in log.records_between(start, upto):
        kept = committed.get(record.offset)
        assert kept is record or kept == record, (
            f"broker {broker.broker_id} {where} {upto} holds {record}, committed is {kept}")
    log.verified_end = upto


def _check_isr_members_hold_committed(cluster: SimCluster) -> None:
    end = cluster.committed_end
    controller = cluster.controller
    for broker_id in (*controller.isr, *controller.elr):
        broker = cluster.brokers[broker_id]
        if not broker.alive:
            continue
        assert broker.log.log_end_offset >= end, f"ISR/ELR member {broker_id} lacks committed records"
        _verify_up_to(cluster, broker, end, "(an ISR/ELR member) below the committed end")
