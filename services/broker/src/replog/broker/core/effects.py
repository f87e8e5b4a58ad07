"""What a step on one partition changed for the requests waiting on it: the data path's effects.

Theory of operation (docs/architecture.md, "An acks=all produce"):

Every step the broker takes on a partition under its lock (a leader's append, a
follower's fetch, an AlterPartition answer, a LeaderAndIsr, a stop) reports what
it changed as one `Effects` value: facts, not actions. The adapter acts on them
once the lock is released, in one place (replicas/consequences.py), by the rules
decided here:

- delayed produces watching the partition are checked when the HW advanced or
  the replica's state changed (a lost leadership answers NOT_LEADER at once). An
  ISR change alone completes none: a wait ends only once the HW reaches its
  offset, and min.insync.replicas is judged at that moment (core/produce.py);
- long polls parked on the partition are woken by `wake`: everyone after an
  append or a state change; consumers after a HW move (followers' sessions are
  only noted: they wait for records, which a HW move does not bring); only the
  sessions of followers outside the ISR after an ISR-only change that moved
  neither the HW nor the assignment (one of them may now be proposed back in);
- a new ISR expansion is handed to the ISR sender.

Invariant: a step that changed nothing returns `NO_EFFECTS` itself (the adapter
skips it by identity), and a read-only step never returns anything else.
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class Wake(enum.Enum):
    """Which long polls parked on a partition must look at it again."""

    NOBODY = "nobody"
    FOLLOWERS_OUTSIDE_ISR = "followers_outside_isr"  # the fetch sessions of followers not in `Effects.isr`
    CONSUMERS = "consumers"  # consumers' polls; followers' fetch sessions are noted without a wake-up
    EVERYONE = "everyone"


class Effects(NamedTuple):
    """What one step changed (a named tuple: a replica fetch reports one per partition it reads)."""

    records_appended: bool = False  # the leader appended records
    hw_advanced: bool = False
    state_changed: bool = False  # leader, leader epoch, assignment or hosting changed (all but a leader's ISR)
    isr_changed: bool = False  # the leader's committed ISR changed
    proposal_settled: bool = False  # the pending ISR proposal got its answer: a follower may be proposed again
    isr_proposed: bool = False  # a new ISR expansion waits to be sent to the controller
    isr: tuple[int, ...] = ()  # the committed ISR after `isr_changed`

    @property
    def completes_delayed_produces(self) -> bool:
        return self.hw_advanced or self.state_changed

    @property
    def wake(self) -> Wake:
        hw_advanced, isr_changed = self.hw_advanced, self.isr_changed
        if self.records_appended or self.state_changed or self.proposal_settled or (isr_changed and hw_advanced):
            return Wake.EVERYONE
        if hw_advanced:
            return Wake.CONSUMERS
        if isr_changed:
            return Wake.FOLLOWERS_OUTSIDE_ISR
        return Wake.NOBODY


NO_EFFECTS = Effects()
STATE_CHANGED = Effects(state_changed=True)
_APPENDED = {False: Effects(records_appended=True), True: Effects(records_appended=True, hw_advanced=True)}
_FOLLOWER_FETCH = {
    (False, False): NO_EFFECTS,
    (True, False): Effects(hw_advanced=True),
    (False, True): Effects(isr_proposed=True),
    (True, True): Effects(hw_advanced=True, isr_proposed=True),
}


def after_append(hw_advanced: bool) -> Effects:
    """A leader's append (a duplicate answered with its original offsets appends nothing)."""
    return _APPENDED[hw_advanced]


def after_follower_fetch(hw_advanced: bool, isr_proposed: bool) -> Effects:
    """A follower's fetch read by the leader: its position may move the HW or propose it into the ISR."""
    return _FOLLOWER_FETCH[hw_advanced, isr_proposed]


def after_isr_change(*, isr: tuple[int, ...], hw_advanced: bool, proposal_settled: bool) -> Effects:
    """The leader adopted a committed ISR (an AlterPartition answer, or a LeaderAndIsr at its epoch)."""
    return Effects(hw_advanced=hw_advanced, isr_changed=True, proposal_settled=proposal_settled, isr=isr)
