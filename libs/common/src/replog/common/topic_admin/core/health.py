"""The four health flags of a partition, with kafka-topics' meanings.

Kafka's ``TopicCommand.PartitionDescription``:

* under-replicated: the ISR is smaller than the replication factor. During a
  reassignment the replication factor is the original replica set's size
  (assigned minus adding), so a replica still being added does not count.
* unavailable: no leader (-1) or a leader that is not alive.
* under-min-ISR: no leader, or the ISR is smaller than min.insync.replicas.
* at-min-ISR: the ISR size equals min.insync.replicas.
* unclean leader (replog's own): the leader in office was elected from outside
  the ISR, so records acknowledged before it may be lost; it clears at the
  next leader change (the state znode keeps the unclean election's leader epoch).

A partition whose state znode does not exist yet (the controller has not
created it) has leader -1 and an empty ISR: unavailable, under-replicated and
under-min-ISR.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import AbstractSet, Sequence

from replog.common.core.partitions import NO_LEADER
from replog.common.zk.schema import PartitionStateRecord



class Filter(enum.Enum):
    NONE = "none"
    UNDER_REPLICATED = "under_replicated"
    UNAVAILABLE = "unavailable"
    UNDER_MIN_ISR = "under_min_isr"
    AT_MIN_ISR = "at_min_isr"


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    unavailable: bool
    under_replicated: bool
    under_min_isr: bool
    at_min_isr: bool
    unclean_leader: bool = False
    elr: tuple[int, ...] = ()  # eligible leader replicas (KIP-966): outside the ISR, may still lead cleanly

    def matches(self, wanted: Filter) -> bool:
        if wanted is Filter.NONE:
            return True
        return bool(getattr(self, wanted.value))


def partition_health(
    replicas: Sequence[int],
    adding: Sequence[int],
    state: PartitionStateRecord | None,
    live: AbstractSet[int],
    min_insync_replicas: int,
) -> PartitionHealth:
    leader, leader_epoch, isr = (state.leader, state.leader_epoch, state.isr) if state else (NO_LEADER, -1, ())
    replication_factor = len(replicas) - len(adding)
    has_leader = leader != NO_LEADER
    return PartitionHealth(
        leader=leader,
        leader_epoch=leader_epoch,
        isr=tuple(isr),
        offline_replicas=tuple(r for r in replicas if r not in live),
        unavailable=not has_leader or leader not in live,
        under_replicated=len(isr) < replication_factor,
        under_min_isr=not has_leader or len(isr) < min_insync_replicas,
        at_min_isr=len(isr) == min_insync_replicas,
        unclean_leader=state is not None and 0 <= state.unclean_leader_epoch == state.leader_epoch,
        elr=tuple(state.elr) if state else (),
    )
