"""Invariants of a controller state, as a pure check returning what is violated.

Theory of operation
-------------------
TigerBeetle-style: say what must hold, and check it.  The simulation calls
:func:`violations` after every step; an executor may call it in a debug build
after ``apply``.  It costs O(partitions), so it is not for the hot path.

Checked (partitions of topics being deleted are exempt from the liveness ones,
because nothing elects for them any more):

* structure: every state has an assignment; every ISR is non-empty, has no
  duplicates and lies inside the assignment; the leader is ``NO_LEADER`` or in
  the ISR; the ELR lies inside the assignment, outside the ISR; the indexes
  match the assignments; the offline count matches;
* liveness: a leader is a live broker, or ``NO_LEADER`` only when no eligible
  (live, not shutting down, its replica not in an offline log directory) ISR
  or ELR member exists -- and, if the topic allows
  unclean election, no eligible assigned replica either; an ISR holds dead
  brokers only as the single member kept when nobody is alive;
* a NEW partition (no state) has no eligible replica;
* reassignments: a tracked target is non-empty and inside the assignment.
"""

from __future__ import annotations

from replog.common.core.partitions import NO_LEADER

from .model import ControllerState


def violations(state: ControllerState, *, limit: int = 20) -> list[str]:
    """Up to ``limit`` human-readable violations (empty when the state is sound)."""
    found: list[str] = []
    live = state.live_brokers
    eligible = state.eligible_broker_ids()
    deleting = state.topics_being_deleted

    def report(message: str) -> bool:
        found.append(message)
        return len(found) >= limit

    def may_lead(b: int, tp) -> bool:  # eligible, and its replica not in an offline log directory
        return b in eligible and live[b].serves(tp)

    for tp, s in state.partition_states.items():
        assignment = state.assignments.get(tp)
        if assignment is None:
            if report(f"{tp}: state without assignment"):
                return found
            continue
        replicas = assignment.replicas
        problems = []
        if not s.isr:
            problems.append("empty ISR")
        if len(set(s.isr)) != len(s.isr):
            problems.append(f"duplicate in ISR {s.isr}")
        if any(b not in replicas for b in s.isr):
            problems.append(f"ISR {s.isr} not inside assignment {replicas}")
        if s.leader != NO_LEADER and s.leader not in s.isr:
            problems.append(f"leader {s.leader} not in ISR {s.isr}")
        if any(b not in replicas or b in s.isr for b in s.elr) or len(set(s.elr)) != len(s.elr):
            problems.append(f"ELR {s.elr} not inside assignment {replicas} and outside ISR {s.isr}")
        if tp.topic not in deleting:
            if s.leader != NO_LEADER and s.leader not in live:
                problems.append(f"dead leader {s.leader}")
            if s.leader == NO_LEADER:
                if any(may_lead(b, tp) and tp not in live[b].lost_partitions for b in s.isr):
                    problems.append(f"no leader although ISR {s.isr} has an eligible member that lost no records")
                elif any(may_lead(b, tp) for b in s.elr):
                    problems.append(f"no leader although ELR {s.elr} has an eligible member")
                elif state.config_of(tp.topic).unclean_leader_election and any(may_lead(b, tp) for b in replicas):
                    problems.append("no leader although unclean election is allowed and a replica is eligible")
            if s.leader != NO_LEADER and s.leader in live and not live[s.leader].serves(tp):
                problems.append(f"leader {s.leader} has its replica in an offline log directory")
            dead_in_isr = [b for b in s.isr if b not in live]
            if dead_in_isr and len(s.isr) > 1:
                problems.append(f"dead brokers {dead_in_isr} in ISR {s.isr}")
        for problem in problems:
            if report(f"{tp}: {problem}"):
                return found
    for tp, assignment in state.assignments.items():
        if tp not in state.partition_states and tp.topic not in deleting:
            if any(may_lead(b, tp) for b in assignment.replicas):
                if report(f"{tp}: never started although a replica is eligible"):
                    return found
        for b in assignment.replicas:
            if tp not in state.partitions_by_broker.get(b, {}):
                if report(f"{tp}: missing from the index of broker {b}"):
                    return found
    indexed = sum(len(tps) for tps in state.partitions_by_broker.values())
    replicas_total = sum(len(a.replicas) for a in state.assignments.values())
    if indexed != replicas_total:
        report(f"broker index holds {indexed} replicas, assignments {replicas_total}")
    by_topic = sum(len(ps) for ps in state.partitions_by_topic.values())
    if by_topic != len(state.assignments):
        report(f"topic index holds {by_topic} partitions, assignments {len(state.assignments)}")
    offline = sum(1 for s in state.partition_states.values() if s.leader == NO_LEADER)
    if offline != state.offline_partition_count:
        report(f"offline count {state.offline_partition_count}, actual {offline}")
    for tp, target in state.reassignments.items():
        assignment = state.assignments.get(tp)
        if not target or assignment is None or any(b not in assignment.replicas for b in target):
            report(f"{tp}: reassignment target {target} not inside assignment {assignment}")
    return found[:limit]
