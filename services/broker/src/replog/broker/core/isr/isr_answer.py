"""What the controller's answer to an ISR proposal proves, and what the leader makes of it.

Theory of operation (docs/architecture.md, "High watermark and ISR"; KIP-497):

`judge_answer` decides and changes nothing; `LeaderReplica.on_alter_partition_answer`
(core/leader.py) applies the verdict and returns one of the outcomes below. Only real
answers come here: a transport failure or a request-level error (NOT_CONTROLLER,
STALE_BROKER_EPOCH) leaves the outcome unknown, and the adapter sends
`proposal_to_resend` again.

Safety rule: the leader's ISR view (committed + pending) must stay a superset of
every ISR the controller may hold, or the HW could pass a replica the controller
may elect. A pending expansion may already be committed even when the answer says
otherwise (an earlier answer was lost, then the controller moved on), so a pending
proposal is dropped only on INELIGIBLE_REPLICA, which the controller decides after
its version checks, i.e. against exactly our committed state. This relies on the
controller never *adding* a replica to an ISR on its own (elections and failures
only remove); additions come from leaders.

- An answer for our leader epoch carrying a newer partition epoch is the
  controller's committed state: adopt it (IsrCommitted when it accepts the
  pending proposal, IsrRefreshed otherwise). Safe: it is the ISR the controller
  holds now, and from there the controller alone only removes members.
- INELIGIBLE_REPLICA: drop the proposal; a later check proposes again.
- FENCED_LEADER_EPOCH, NOT_LEADER, a non-adoptable INVALID_UPDATE_VERSION: we
  are stale; keep the proposal, do not resend, await the LeaderAndIsr.
- Other errors: outcome unknown; keep it and resend.
- An answer to a proposal no longer pending: ignored (unless adoptable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from replog.broker.core.effects import NO_EFFECTS, Effects, after_isr_change
from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr.high_watermark import HighWatermarkUpdate
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal, IsrChangeKind

# --- outcomes (what the leader reports after applying a verdict) ---------------------------


@dataclass(frozen=True)
class IsrCommitted:
    isr: tuple[int, ...]
    partition_epoch: int
    kind: IsrChangeKind
    high_watermark_update: HighWatermarkUpdate

    @property
    def effects(self) -> Effects:
        return after_isr_change(isr=self.isr, hw_advanced=self.high_watermark_update.advanced, proposal_settled=True)


@dataclass(frozen=True)
class IsrRefreshed:
    """The answer carried a newer committed state for our leader epoch than we knew
    (e.g. INVALID_UPDATE_VERSION after a lost answer); the leader adopted it."""

    isr: tuple[int, ...]
    partition_epoch: int
    high_watermark_update: HighWatermarkUpdate

    @property
    def effects(self) -> Effects:
        return after_isr_change(isr=self.isr, hw_advanced=self.high_watermark_update.advanced, proposal_settled=True)


@dataclass(frozen=True)
class ProposalDropped:
    """Refused against exactly our committed state (INELIGIBLE_REPLICA); a later check proposes again.

    A dropped expansion shrinks the maximal ISR, so the HW may advance at once."""

    error_code: ErrorCode
    proposal: AlterPartitionProposal
    high_watermark_update: HighWatermarkUpdate

    @property
    def effects(self) -> Effects:
        return Effects(hw_advanced=self.high_watermark_update.advanced, proposal_settled=True)


@dataclass(frozen=True)
class ProposalStillPending:
    """Refused in a way that does not prove the controller's ISR is ours: the proposal stays
    pending (and counts in the maximal ISR). `resend`: send it again (outcome unknown);
    otherwise wait for the LeaderAndIsr that will replace this leader state."""

    error_code: ErrorCode
    proposal: AlterPartitionProposal
    resend: bool

    effects = NO_EFFECTS


@dataclass(frozen=True)
class AnswerIgnored:
    reason: str

    effects = NO_EFFECTS


AlterPartitionOutcome = IsrCommitted | IsrRefreshed | ProposalDropped | ProposalStillPending | AnswerIgnored

# --- verdicts (what an answer proves) -------------------------------------------------------


class AdoptState(NamedTuple):
    """The answer carries the controller's committed state for our leader epoch."""

    accepts_pending: bool  # it is the acceptance of the pending proposal


class DropProposal(NamedTuple):
    """INELIGIBLE_REPLICA for the pending proposal."""


class KeepProposal(NamedTuple):
    await_new_state: bool  # we are stale: do not resend, wait for the LeaderAndIsr


class IgnoreAnswer(NamedTuple):
    reason: str


Verdict = AdoptState | DropProposal | KeepProposal | IgnoreAnswer

# Refusals after which the leader is stale: keep the proposal, do not resend, await LeaderAndIsr.
_AWAIT_NEW_STATE = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.NOT_LEADER,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


def stale_answer_reason(answer: AlterPartitionAnswer, *, broker_id: int, leader_epoch: int, partition_epoch: int,
                        replicas: tuple[int, ...]) -> str | None:
    """Why the state the answer carries cannot be adopted by this leader; None when it can."""
    if answer.leader_epoch != leader_epoch or answer.leader_id != broker_id:
        return f"answer for leader {answer.leader_id} epoch {answer.leader_epoch}"
    if answer.partition_epoch <= partition_epoch:
        return f"answer partition epoch {answer.partition_epoch} not newer than {partition_epoch}"
    if broker_id not in answer.isr or not set(answer.isr) <= set(replicas):
        return f"answer ISR {answer.isr} invalid for leader {broker_id}"
    return None


def judge_answer(answer: AlterPartitionAnswer, *, is_pending: bool, stale_reason: str | None) -> Verdict:
    """The verdict on the answer to a proposal (`is_pending`: it is still the pending one)."""
    carries_state = answer.error_code in (ErrorCode.NONE, ErrorCode.INVALID_UPDATE_VERSION)
    if carries_state and stale_reason is None:
        return AdoptState(accepts_pending=answer.error_code is ErrorCode.NONE and is_pending)
    if not is_pending:
        return IgnoreAnswer("answer for a proposal no longer pending")
    if answer.error_code is ErrorCode.INELIGIBLE_REPLICA:
        return DropProposal()
    if answer.error_code is ErrorCode.NONE:
        return IgnoreAnswer(f"accepted, but {stale_reason}")
    return KeepProposal(await_new_state=answer.error_code in _AWAIT_NEW_STATE)
