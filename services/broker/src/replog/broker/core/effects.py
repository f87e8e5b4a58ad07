"""What a step on one partition changed for the requests waiting on it: the data path's effects.

Theory of operation (docs/architecture.md, "An acks=all produce"):

Every step the broker takes on a partition under its lock (a leader's append, a
follower's fetch, an AlterPartition answer, a LeaderAndIsr, a stop) reports what
it changed as one `Effects` value: facts, not actions. The adapter acts on them
once the lock is released, in one place (replicas/consequences.py), by the rules
decided here:

- delayed produces watching the partition are checked when the HW advanced,
  the replica's state changed (a lost leadership answers NOT_LEADER at once) or
  the committed ISR changed: an ISR below min.insync.replicas holds the HW
  (strict min ISR, core/isr/high_watermark.py), so the waits answer at once instead of
  at their deadline (core/produce/produce.py);
- long polls parked on the partition are woken by `wake`: everyone after an
  append or a state change; consumers after a HW move (followers' sessions are
  only noted: they wait for records, which a HW move does not bring); only the
  sessions of followers outside the ISR after an ISR-only change that moved
  neither the HW nor the assignment (one of them may now be proposed back in);
  everyone too after the log start moved (retention, DeleteRecords), so the
  followers' sessions read the partition and pass the new start on;
- a new ISR expansion is handed to the ISR sender.

Invariant: a step that changed nothing returns `NO_EFFECTS` itself (the adapter
skips it by identity), and a read-only step never returns anything else.

This is the one effects type of a partition step: the core's steps
(leader_steps.py, follower_steps.py) return one value of it beside their answer,
as do the adapter's other steps. What a LeaderAndIsr asks the adapter to do
(StopFetcher, StartFetcher, ...: `Applied.effects`, partition.py) is a list of
actions for the controller's requests, not facts for waiting requests.
"""

from __future__ import annotations

import enum


class Wake(enum.Enum):
    """Which long polls parked on a partition must look at it again."""

    NOBODY = "nobody"
    FOLLOWERS_OUTSIDE_ISR = "followers_outside_isr"  # the fetch sessions of followers not in `Effects.isr`
    CONSUMERS = "consumers"  # consumers' polls; followers' fetch sessions are noted without a wake-up
    EVERYONE = "everyone"


class Effects:
    """What one step changed, and the two rules read from it (`wake`, `completes_delayed_produces`),
    worked out once when it is made: the adapter reads them for every partition of every fetch
    answer and controller request, and most steps return one of the constants below.

    Immutable by convention (slots, no setters used): `with_state_changed` makes a new one."""

    __slots__ = ("records_appended", "hw_advanced", "state_changed", "isr_changed", "proposal_settled",
                 "isr_proposed", "isr", "log_start_moved", "wake", "completes_delayed_produces")

    def __init__(
        self,
        *,
        records_appended: bool = False,  # the leader appended records
        hw_advanced: bool = False,
        state_changed: bool = False,  # leader, leader epoch, assignment or hosting changed (all but a leader's ISR)
        isr_changed: bool = False,  # the leader's committed ISR changed
        proposal_settled: bool = False,  # the pending ISR proposal got its answer: a follower may be proposed again
        isr_proposed: bool = False,  # a new ISR expansion waits to be sent to the controller
        isr: tuple[int, ...] = (),  # the committed ISR after `isr_changed`
        log_start_moved: bool = False,  # retention or DeleteRecords raised the log start offset
    ) -> None:
        self.records_appended = records_appended
        self.hw_advanced = hw_advanced
        self.state_changed = state_changed
        self.isr_changed = isr_changed
        self.proposal_settled = proposal_settled
        self.isr_proposed = isr_proposed
        self.isr = isr
        self.log_start_moved = log_start_moved
        self.completes_delayed_produces = hw_advanced or state_changed or isr_changed
        if records_appended or state_changed or proposal_settled or log_start_moved or (isr_changed and hw_advanced):
            self.wake = Wake.EVERYONE
        elif hw_advanced:
            self.wake = Wake.CONSUMERS
        elif isr_changed:
            self.wake = Wake.FOLLOWERS_OUTSIDE_ISR
        else:
            self.wake = Wake.NOBODY

    def _facts(self) -> tuple:
        return (self.records_appended, self.hw_advanced, self.state_changed, self.isr_changed,
                self.proposal_settled, self.isr_proposed, self.isr, self.log_start_moved)

    def with_state_changed(self) -> Effects:
        return Effects(records_appended=self.records_appended, hw_advanced=self.hw_advanced, state_changed=True,
                       isr_changed=self.isr_changed, proposal_settled=self.proposal_settled,
                       isr_proposed=self.isr_proposed, isr=self.isr, log_start_moved=self.log_start_moved)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Effects) and self._facts() == other._facts()

    def __hash__(self) -> int:
        return hash(self._facts())

    def __repr__(self) -> str:
        names = ("records_appended", "hw_advanced", "state_changed", "isr_changed", "proposal_settled",
                 "isr_proposed", "log_start_moved")
        facts = [name for name in names if getattr(self, name)]
        return f"Effects({', '.join(facts)}{f', isr={self.isr}' if self.isr else ''})"


NO_EFFECTS = Effects()
STATE_CHANGED = Effects(state_changed=True)
LOG_START_MOVED = Effects(log_start_moved=True)
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
