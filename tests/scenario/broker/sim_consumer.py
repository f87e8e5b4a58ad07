"""The simulation's consumer: reads the partition from the leader it believes in, and what it read must last.

A `SimConsumer` keeps a position and the leader its metadata names (refreshed, as the producer's, from
the simulated controller or from what one broker believes, when the action says and after any refusal).
A read is the broker's own consumer-fetch rule (core/fetch/fetch.plan_consumer_fetch: it must lead, at
the leader epoch the consumer names, and exposes records below its HW only), then up to
FETCH_RECORDS_MAX records from its log. It is a plain reader, not the client's Consumer: the client's
fetcher is a thread over gRPC futures whose only pure piece, its divergence arithmetic after a new
leader epoch, has nothing to do here, since a consumer that reads committed records only never sees
its log diverge; that is what is checked.

Checks: every record read is the committed one at its offset (the truth, sim_cluster.py), and, once
the cluster healed (`check_against`), every record read is still in the converged log: none the
consumer saw was later truncated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replog.broker.core.errors import Refusal
from replog.broker.core.fetch.fetch import plan_consumer_fetch
from replog.broker.core.partition import ReplicaRole
from tests.scenario.broker.sim_members import FETCH_RECORDS_MAX
from tests.scenario.broker.sim_producer import read_leader

if TYPE_CHECKING:
    from tests.scenario.broker.sim_cluster import SimCluster
    from tests.unit.broker.core.fake_log import FakeLog, FakeRecord


class SimConsumer:
    def __init__(self) -> None:
        self.position = 0
        self.leader: tuple[str, int] | None = None  # (broker id as an address, leader epoch) metadata names
        self.read: list[FakeRecord] = []

    def consume(self, cluster: SimCluster, source: int) -> str:
        if self.leader is None:
            self.leader = read_leader(cluster, source)
            if self.leader is None:
                return "consume: no leader known"
        broker_id, leader_epoch = int(self.leader[0]), self.leader[1]
        broker = cluster.brokers[broker_id]
        if not broker.alive:
            self.leader = None
            return f"consume from {broker_id}: not alive"
        log = broker.log
        plan = plan_consumer_fetch(
            is_leader=broker.role is ReplicaRole.LEADER, leader_epoch=broker.leader_epoch,
            current_leader_epoch=leader_epoch, fetch_offset=self.position, log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset, high_watermark=broker.replica.high_watermark)
        if isinstance(plan, Refusal):
            self.leader = None  # metadata is refreshed before the next read
            return f"consume from {broker_id} at {self.position}: {plan.code.name}"
        upto = min(plan.read_upto_offset, self.position + FETCH_RECORDS_MAX)
        records = log.records_between(self.position, upto)
        committed = cluster.committed
        for record in records:
            kept = committed.get(record.offset)
            assert kept == record, f"a consumer read {record} from broker {broker_id}; committed is {kept}"
        self.read.extend(records)
        self.position = upto if records else self.position
        return f"consume from {broker_id}: {len(records)} records, at {self.position}"

    def check_against(self, log: FakeLog) -> None:
        """Every record read is still at its offset in `log` (the converged log, once healed)."""
        if not self.read:
            return
        kept = {r.offset: r for r in log.records_between(self.read[0].offset, self.read[-1].offset + 1)}
        for record in self.read:
            assert kept.get(record.offset) == record, (
                f"a consumer read {record}, later truncated: the log holds {kept.get(record.offset)}")
