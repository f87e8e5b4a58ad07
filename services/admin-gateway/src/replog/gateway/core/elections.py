"""Leader elections asked by an operator: pre-checks and outcomes.

Theory of operation
-------------------
The controller elects; the gateway asks. Before writing the request znode the
gateway answers, per partition, what it can know from the snapshot (Kafka's
``ElectLeaders`` codes):

* preferred: ELECTION_NOT_NEEDED when the preferred (first assigned) replica
  already leads; PREFERRED_LEADER_NOT_AVAILABLE when it is dead or not in the
  ISR; otherwise the partition is eligible.
* unclean: ELECTION_NOT_NEEDED when a live leader exists (unclean election is
  only for offline partitions); ELIGIBLE_LEADERS_NOT_AVAILABLE when no
  assigned replica is alive; otherwise eligible.
* UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist.

Only eligible partitions go into the request. After the controller deletes the
znode (or the wait times out), :func:`outcomes_after` reads the new states:
NONE where the partition is now led as asked, else the reason.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from replog.common.core.partitions import TopicPartition
from replog.common.error_codes import ErrorCode

from replog.common.topic_admin.core.model import ClusterView
from .reassignments import label
from replog.common.topic_admin.core.refusal import invalid

ELECTION_PARTITIONS_MAX = 100_000


class ElectionType(enum.Enum):
    PREFERRED = "preferred"
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class Outcome:
    topic: str
    partition: int
    code: ErrorCode
    message: str = ""


@dataclass(frozen=True)
class Precheck:
    decided: dict[TopicPartition, Outcome]     # answered without the controller
    eligible: tuple[TopicPartition, ...]       # to put in the request


def chosen_partitions(
    view: ClusterView, partitions: Sequence[TopicPartition], all_partitions: bool
) -> list[TopicPartition]:
    if all_partitions and partitions:
        raise invalid("Give either partitions or all, not both.")
    if not all_partitions and not partitions:
        raise invalid("Name the partitions to elect leaders for, or ask for all.")
    if all_partitions:
        return sorted((name, p) for name, topic in view.topics.items() if not topic.deleting
                      for p in topic.assignment.partitions)
    if len(partitions) > ELECTION_PARTITIONS_MAX:
        raise invalid(f"{len(partitions)} partitions named, more than the {ELECTION_PARTITIONS_MAX} allowed at once.")
    seen: set[TopicPartition] = set()
    for tp in partitions:
        if tp in seen:
            raise invalid(f"Partition {label(tp)} is listed twice.")
        seen.add(tp)
    return list(partitions)


def precheck(view: ClusterView, election_type: ElectionType, partitions: Sequence[TopicPartition]) -> Precheck:
    decided: dict[TopicPartition, Outcome] = {}
    eligible: list[TopicPartition] = []
    live = view.live_broker_ids
    for tp in partitions:
        topic = view.topic(tp[0])
        if topic is None or tp[1] not in topic.assignment.partitions:
            decided[tp] = Outcome(*tp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Partition {label(tp)} does not exist.")
            continue
        if topic.deleting:
            decided[tp] = Outcome(*tp, ErrorCode.TOPIC_DELETION_IN_PROGRESS, f"Topic '{tp[0]}' is being deleted.")
            continue
        replicas = topic.assignment.partitions[tp[1]]
        state = topic.states.get(tp[1])
        leader, isr = (state.leader, state.isr) if state else (-1, ())
        if election_type is ElectionType.PREFERRED:
            preferred = replicas[0]
            if leader == preferred:
                decided[tp] = Outcome(*tp, ErrorCode.ELECTION_NOT_NEEDED,
                                      f"The preferred replica {preferred} already leads.")
            elif preferred not in live:
                decided[tp] = Outcome(*tp, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                      f"The preferred replica {preferred} is not alive.")
            elif preferred not in isr:
                decided[tp] = Outcome(*tp, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                      f"The preferred replica {preferred} is not in the ISR {list(isr)}.")
            else:
                eligible.append(tp)
        else:
            if leader != -1 and leader in live:
                decided[tp] = Outcome(*tp, ErrorCode.ELECTION_NOT_NEEDED, f"Broker {leader} leads and is alive.")
            elif not any(r in live for r in replicas):
                decided[tp] = Outcome(*tp, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                      f"No assigned replica of {label(tp)} is alive (replicas {list(replicas)}).")
            else:
                eligible.append(tp)
    return Precheck(decided, tuple(eligible))


def led_as_asked(view: ClusterView, election_type: ElectionType, tp: TopicPartition) -> bool:
    topic = view.topic(tp[0])
    if topic is None or tp[1] not in topic.assignment.partitions:
        return False
    state = topic.states.get(tp[1])
    if state is None:
        return False
    if election_type is ElectionType.PREFERRED:
        return state.leader == topic.assignment.partitions[tp[1]][0]
    return state.leader != -1 and state.leader in view.live_broker_ids


def outcomes_after(
    view: ClusterView, election_type: ElectionType, eligible: Sequence[TopicPartition],
    completed: bool, timeout_ms: int,
) -> dict[TopicPartition, Outcome]:
    out: dict[TopicPartition, Outcome] = {}
    for tp in eligible:
        if led_as_asked(view, election_type, tp):
            out[tp] = Outcome(*tp, ErrorCode.NONE)
        elif not completed:
            out[tp] = Outcome(*tp, ErrorCode.REQUEST_TIMED_OUT,
                              f"The controller did not complete the election within {timeout_ms} ms; "
                              "the request stays queued for it.")
        elif election_type is ElectionType.PREFERRED:
            out[tp] = Outcome(*tp, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                              "The controller did not move leadership to the preferred replica.")
        else:
            out[tp] = Outcome(*tp, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                              "The controller found no live replica to elect.")
    return out
