"""Leader-epoch fencing of requests (KIP-320 style), one rule for every request kind.

What it owns: the comparison of the leader epoch a request believes current
with the epoch this replica holds. An older request epoch means the sender
missed a leader change (FENCED_LEADER_EPOCH: refresh and retry elsewhere); a
newer one means this replica has not yet heard of it (UNKNOWN_LEADER_EPOCH:
retry later). Clients may send -1 to skip the check; replicas may not.

It also owns how far the controller may move a replica's leader epoch in one request
(`check_leader_epoch_jump`). The controller raises a partition's leader epoch by one per
leader change, each a ZooKeeper write, and tells every live replica; a replica that missed
some (its request was lost) gets its whole state again within the controller's resync delay
(at most 30 s). `LEADER_EPOCH_JUMP_MAX` is far above what a partition can go through in that
time (it would take thousands of elections a second of one partition) and far below the
int32 limit, so a corrupt or made-up epoch (2147483647, say) is refused instead of adopted:
adopted, it would fence the real controller's every later request for that replica out until
the broker restarts. A replica loaded from disk holds no epoch yet: its jump is measured from
the latest epoch in its log's epoch cache. A new replica with an empty log has nothing to
measure from, so one more bound holds for every replica: no leader epoch above
`LEADER_EPOCH_MAX`, where fewer than LEADER_EPOCH_JUMP_MAX leader changes would be left before
the int32 limit (2147483647 in the epoch cache would wedge the partition for good: its next
leader could not be given a higher epoch). The controller's fence (controller_epoch.py) is the
other guard: only a ZooKeeper-confirmed controller is obeyed at all.
"""

from __future__ import annotations

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.log_view import NO_LEADER_EPOCH

LEADER_EPOCH_JUMP_MAX = 1 << 16
# The highest leader epoch a replica takes: above it fewer than LEADER_EPOCH_JUMP_MAX leader changes fit
# below the int32 limit of the wire and of the epoch cache.
LEADER_EPOCH_MAX = (1 << 31) - 1 - LEADER_EPOCH_JUMP_MAX


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


def check_leader_epoch_jump(request_leader_epoch: int, held_leader_epoch: int) -> Refusal | None:
    """None unless the controller's `request_leader_epoch` is more than LEADER_EPOCH_JUMP_MAX past the
    epoch this replica holds, or above LEADER_EPOCH_MAX (the one bound for a replica holding none)."""
    if held_leader_epoch != NO_LEADER_EPOCH and request_leader_epoch - held_leader_epoch > LEADER_EPOCH_JUMP_MAX:
        return Refusal(
            ErrorCode.INVALID_REQUEST,
            f"leader epoch {request_leader_epoch} is more than {LEADER_EPOCH_JUMP_MAX} past the held "
            f"{held_leader_epoch}: not a real leader epoch (the controller raises it by one per leader change)",
        )
    if request_leader_epoch > LEADER_EPOCH_MAX:
        return Refusal(
            ErrorCode.INVALID_REQUEST,
            f"leader epoch {request_leader_epoch} is above {LEADER_EPOCH_MAX}: not a real leader epoch (too close "
            f"to the int32 limit for the partition's next leader changes)",
        )
    return None
