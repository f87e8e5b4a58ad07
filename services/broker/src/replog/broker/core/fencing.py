"""Leader-epoch fencing of requests (KIP-320 style), one rule for every request kind.

What it owns: the comparison of the leader epoch a request believes current
with the epoch this replica holds. An older request epoch means the sender
missed a leader change (FENCED_LEADER_EPOCH: refresh and retry elsewhere); a
newer one means this replica has not yet heard of it (UNKNOWN_LEADER_EPOCH:
retry later). Clients may send -1 to skip the check; replicas may not.
"""

from __future__ import annotations

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.log_view import NO_LEADER_EPOCH


def check_leader_epoch(
    request_leader_epoch: int, held_leader_epoch: int, *, unset_allowed: bool
) -> Refusal | None:
    """None when the request's epoch matches (or is unset and that is allowed)."""
    if request_leader_epoch == NO_LEADER_EPOCH and unset_allowed:
        return None
    if request_leader_epoch < held_leader_epoch:
        return Refusal(
            ErrorCode.FENCED_LEADER_EPOCH,
            f"request leader epoch {request_leader_epoch} < current {held_leader_epoch}",
        )
    if request_leader_epoch > held_leader_epoch:
        return Refusal(
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            f"request leader epoch {request_leader_epoch} > current {held_leader_epoch}",
        )
    return None
