"""ISR change proposals (AlterPartition) and the "maximal ISR" (KIP-497).

Theory of operation (docs/architecture.md, "High watermark and ISR"; Kafka `PendingExpandIsr` /
`PendingShrinkIsr`, KIP-497):

The leader never changes the ISR itself: it proposes a new ISR to the
controller, which is the single writer of partition state. A proposal carries
the leader epoch and partition epoch it was based on, so the controller can
refuse a stale one (FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION). It also names
each member's broker epoch as the member's fetches told it (KIP-903): a member
joins with the epoch of the fetch that caught it up, and the controller refuses
it if it has registered again since. Without that, a copy of an expansion the
leader had already dropped (refused, the HW moved on) could be accepted after
the member restarted: an ISR member lacking committed records.

At most one proposal per partition is in flight. It stays pending until an
answer proves what the controller holds: an accepted answer, or any answer
carrying a newer committed state for our leader epoch, is adopted; only
INELIGIBLE_REPLICA (decided against exactly our committed state) drops it.
No answer (transport failure) is not a refusal: the outcome is unknown, so the
proposal stays pending and is resent unchanged; a "you are stale" refusal
(FENCED_LEADER_EPOCH, ...) keeps it pending until LeaderAndIsr replaces the
leader state. See `LeaderReplica.on_alter_partition_answer` for why.

Maximal ISR: while a proposal is pending the leader computes its HW over the
union of the committed ISR and the proposed ISR:
- pending shrink: the union is the old, larger ISR. The controller may not
  have accepted the shrink; until it has, the removed follower could still be
  elected, so the HW must not pass it.
- pending expansion: the union includes the new member at once. If the
  controller accepts, the member is in the ISR from that moment and may be
  elected, so it must already hold everything below the HW.
Either way the HW is computed over a superset of any ISR the controller may
hold, which is what makes a clean election from the controller's ISR safe.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

from replog.broker.core.errors import ErrorCode
from replog.common.core.partitions import TopicPartition


class IsrChangeKind(enum.Enum):
    EXPAND = "expand"
    SHRINK = "shrink"


@dataclass(frozen=True)
class AlterPartitionProposal:
    """One AlterPartitionItem for the adapter to send to the controller."""

    topic_partition: TopicPartition
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
    kind: IsrChangeKind
    new_isr_broker_epochs: tuple[int, ...]  # per new_isr member, from its fetches; 0 when unknown (the leader)


@dataclass(frozen=True)
class AlterPartitionAnswer:
    """The controller's per-partition AlterPartitionResult: its error code and the
    partition state after the request (the current state when refused)."""

    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


def in_assignment_order(members: Iterable[int], replicas: tuple[int, ...]) -> tuple[int, ...]:
    """ISR members ordered as in the assignment (deterministic proposals and logs)."""
    wanted = set(members)
    ordered = tuple(r for r in replicas if r in wanted)
    assert len(ordered) == len(wanted), (sorted(wanted), replicas)
    return ordered


def maximal_isr(committed_isr: tuple[int, ...], pending: AlterPartitionProposal | None) -> frozenset[int]:
    if pending is None:
        return frozenset(committed_isr)
    return frozenset(committed_isr) | frozenset(pending.new_isr)


INELIGIBLE_RETRY_MS = 5_000


class IneligibleReplicas:
    """Followers the controller refused as INELIGIBLE_REPLICA (shutting down, KIP-841): not proposed
    again for INELIGIBLE_RETRY_MS from their next fetch, since a shutting-down follower keeps fetching
    until it exits and each fetch would propose it again (docs/perf/ineligible-retry.md)."""

    def __init__(self) -> None:
        self._retry_at_ms: dict[int, int | None] = {}  # None: refused; the clock starts at its next fetch

    def refused(self, replica_ids: Iterable[int]) -> None:
        for replica_id in replica_ids:
            self._retry_at_ms[replica_id] = None

    def may_propose(self, replica_id: int, now_ms: int) -> bool:
        """Whether `replica_id`, fetching now, may be proposed (starts its back-off after a refusal)."""
        if replica_id not in self._retry_at_ms:
            return True
        retry_at_ms = self._retry_at_ms[replica_id]
        if retry_at_ms is None:
            self._retry_at_ms[replica_id] = now_ms + INELIGIBLE_RETRY_MS
            return False
        if now_ms < retry_at_ms:
            return False
        del self._retry_at_ms[replica_id]
        return True
