"""Which controller epochs a broker obeys: the rule behind its controller fence.

What it owns: the decision, for each controller request, whether its controller epoch is
the one to obey, and what the broker's fence holds afterwards.

Theory of operation (docs/architecture.md, "Fencing"; seed: KafkaController's
controllerEpoch checks in ReplicaManager). The controller epoch is the value of ZooKeeper's
`/controller_epoch`, raised by one by each controller that wins the seat. A broker keeps the
highest epoch it has obeyed (its fence) and:

- refuses an epoch below the fence: a deposed controller that has not noticed yet;
- obeys an epoch equal to the fence without asking anyone, once the fence holds an epoch
  ZooKeeper confirmed;
- obeys an epoch above the fence only once ZooKeeper confirms it is the epoch in
  `/controller_epoch`. A request cannot raise the fence by itself: one that named
  2147483647 would otherwise lock the real controller out until the broker restarts.
  Controller changes are rare, so this costs one ZooKeeper read per new controller, not
  one per request or per partition;
- refuses a negative epoch outright: no controller ever holds one.

A broker starts with no fence (NO_CONTROLLER_EPOCH, -1, confirmed by nobody): its first controller
request, whatever its epoch, is judged against ZooKeeper's. Else a request naming -1 would be
obeyed by every broker between its start and the real controller's first request.

When ZooKeeper's epoch is higher than the request's, the fence moves to ZooKeeper's epoch (it
is real: a controller holds it) and the request is refused as stale. When it is lower, the
request names an epoch no controller has held: it is refused and the fence stays.

Invariant: the fence only ever holds -1 or an epoch ZooKeeper confirmed, and never goes down; a
request is obeyed only at an epoch ZooKeeper confirmed.
"""

from __future__ import annotations

from typing import NamedTuple

from replog.broker.core.errors import ErrorCode, Refusal

NO_CONTROLLER_EPOCH = -1


class Verdict(NamedTuple):
    """The fence after the request, and the refusal to answer with (None: obey it)."""

    fence: int
    refusal: Refusal | None


def needs_confirmation(request_epoch: int, fence: int) -> bool:
    """True when only ZooKeeper's `/controller_epoch` can tell whether to obey `request_epoch`."""
    return request_epoch > fence or (fence == NO_CONTROLLER_EPOCH and request_epoch >= 0)


def judge(request_epoch: int, fence: int, confirmed_epoch: int | None = None) -> Verdict:
    """Whether to obey a request at `request_epoch`; `confirmed_epoch` is what ZooKeeper holds,
    read when `needs_confirmation` said so (else None)."""
    if request_epoch < 0:
        return Verdict(fence, Refusal(
            ErrorCode.STALE_CONTROLLER_EPOCH, f"controller epoch {request_epoch} is negative: no controller holds it"))
    if request_epoch < fence:
        return Verdict(fence, Refusal(
            ErrorCode.STALE_CONTROLLER_EPOCH,
            f"controller epoch {request_epoch} < {fence}, the current controller's: a deposed controller"))
    if request_epoch == fence and fence != NO_CONTROLLER_EPOCH:
        return Verdict(fence, None)
    assert confirmed_epoch is not None, "an epoch above the fence is judged against ZooKeeper's"
    if confirmed_epoch == request_epoch:
        return Verdict(request_epoch, None)
    if confirmed_epoch > request_epoch:
        return Verdict(max(fence, confirmed_epoch), Refusal(
            ErrorCode.STALE_CONTROLLER_EPOCH,
            f"controller epoch {request_epoch} < {confirmed_epoch} in ZooKeeper's /controller_epoch: "
            f"a deposed controller"))
    return Verdict(fence, Refusal(
        ErrorCode.STALE_CONTROLLER_EPOCH,
        f"controller epoch {request_epoch} is not the one in ZooKeeper's /controller_epoch ({confirmed_epoch}): "
        f"no controller has held it; the request is refused and this broker keeps obeying epoch {fence}"))
