"""DeleteRecords on the gateway: which leader moves which partition's log start (pure).

Theory of operation (Kafka's DeleteRecords, KIP-107): the request names
partitions and offsets; the gateway checks all of it against one snapshot of
ZooKeeper before anything is deleted (the topic and partition exist and are not
being deleted, no partition is named twice, an offset is -1, the HW, or 0 or
more, the partition has a live leader), then `check_high_watermarks` checks the
offsets against the leaders' high watermarks, and the adapter asks each leader
(`LogService.AdvanceLogStartOffset`). A leader change in between is answered
NOT_LEADER for that partition; running the request again is safe, as moving a
log start is idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from replog.common.core.partitions import NO_LEADER
from replog.common.topic_admin.core.model import ClusterView
from replog.common.topic_admin.core.refusal import invalid, not_found, precondition

HIGH_WATERMARK = -1
DELETIONS_MAX = 100_000  # partitions one request may name


@dataclass(frozen=True)
class Deletion:
    topic: str
    partition: int
    offset: int  # -1: the high watermark


@dataclass(frozen=True)
class Routed:
    deletion: Deletion
    leader_id: int


def route_deletions(view: ClusterView, deletions: Sequence[Deletion]) -> list[Routed]:
    """Each deletion with the live broker leading its partition, in request order; a Refusal otherwise."""
    if not deletions:
        raise invalid("Name at least one partition and offset.")
    if len(deletions) > DELETIONS_MAX:
        raise invalid(f"{len(deletions)} partitions named; one request takes at most {DELETIONS_MAX}.")
    seen: set[tuple[str, int]] = set()
    routed = []
    for deletion in deletions:
        key = (deletion.topic, deletion.partition)
        if key in seen:
            raise invalid(f"Partition {deletion.topic}-{deletion.partition} is named twice.")
        seen.add(key)
        if deletion.offset < HIGH_WATERMARK:
            raise invalid(f"Offset {deletion.offset} for {deletion.topic}-{deletion.partition} is negative; "
                          "give an offset of 0 or more, or -1 for the high watermark.")
        routed.append(Routed(deletion, _live_leader(view, deletion)))
    return routed


def _live_leader(view: ClusterView, deletion: Deletion) -> int:
    topic = view.topic(deletion.topic)
    if topic is None:
        raise not_found(f"Topic '{deletion.topic}' does not exist.")
    if topic.deleting:
        raise precondition(f"Topic '{deletion.topic}' is being deleted.")
    if deletion.partition not in topic.assignment.partitions:
        raise not_found(f"Topic '{deletion.topic}' has no partition {deletion.partition} "
                        f"(it has {len(topic.assignment.partitions)}).")
    state = topic.states.get(deletion.partition)
    leader = NO_LEADER if state is None else state.leader
    if leader == NO_LEADER or leader not in view.live_broker_ids:
        raise precondition(f"Partition {deletion.topic}-{deletion.partition} has no live leader; "
                           "retry once it has one.")
    return leader


def check_high_watermarks(routed: Sequence[Routed], high_watermarks: Mapping[tuple[str, int], int]) -> None:
    """Refuse an offset above its partition's high watermark (as the leaders reported it; a partition
    whose leader did not answer is left to the leader's own check)."""
    for item in routed:
        deletion = item.deletion
        high_watermark = high_watermarks.get((deletion.topic, deletion.partition))
        if high_watermark is not None and deletion.offset > high_watermark:
            raise precondition(
                f"Offset {deletion.offset} for {deletion.topic}-{deletion.partition} is above its high watermark "
                f"{high_watermark}; only committed records can be deleted (-1 deletes up to the high watermark).")
