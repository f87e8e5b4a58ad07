"""What must hold in the simulated cluster after every step, checked against its recorded truth.

- a live replica's HW is within its log, and everything below it is committed;
- every live ISR member, and every live eligible leader replica, holds every committed record;
- every record acknowledged to an acks=-1 producer is committed;
- no idempotent batch is committed twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replog.broker.core.partition import ReplicaRole

if TYPE_CHECKING:
    from tests.scenario.broker.sim_cluster import SimCluster


def check_invariants(cluster: SimCluster) -> None:
    for broker in cluster.brokers.values():
        if not broker.alive:
            continue
        if broker.role is ReplicaRole.LEADER:
            cluster.note_leader(broker)
        hw = broker.replica.high_watermark
        assert hw <= broker.log.log_end_offset, f"broker {broker.broker_id}: HW {hw} > LEO"
        for record in broker.log.records_between(0, hw):
            assert cluster.committed.get(record.offset) == record, (
                f"broker {broker.broker_id} below HW {hw} holds {record}, committed is "
                f"{cluster.committed.get(record.offset)}"
            )
    _check_isr_members_hold_committed(cluster)
    for ticket in cluster.acked:
        record = cluster.committed.get(ticket.base_offset)
        assert record is not None and record.payload == ticket.payload, f"acked {ticket.payload} not committed"
    sequences = [(r.producer_id, r.sequence) for r in cluster.committed.values() if r.producer_id != -1]
    assert len(sequences) == len(set(sequences)), "an idempotent batch was committed twice"


def _check_isr_members_hold_committed(cluster: SimCluster) -> None:
    end = max(cluster.committed, default=-1) + 1
    for broker_id in (*cluster.controller.isr, *cluster.controller.elr):
        broker = cluster.brokers[broker_id]
        if not broker.alive:
            continue
        assert broker.log.log_end_offset >= end, f"ISR/ELR member {broker_id} lacks committed records"
        for record in broker.log.records_between(0, end):
            assert cluster.committed[record.offset] == record, f"ISR/ELR member {broker_id} differs at {record.offset}"
