"""AlterPartition: a leader proposes a new ISR; the controller is its only writer.

Theory of operation
-------------------
docs/architecture.md, "High watermark and ISR"; KIP-497 and Kafka's ZK-mode ``processAlterPartition``.
The controller checks, in order:

1. the sender is a registered broker with that ``broker_epoch``: else the
   whole request is refused with STALE_BROKER_EPOCH. A request without one (0)
   is refused too: "not given" would let any caller speak for any broker;
per item:
2. the partition exists and is not being deleted: UNKNOWN_TOPIC_OR_PARTITION;
3. the sender is its leader: NOT_LEADER;
4. the proposal's ``leader_epoch`` is the current one: FENCED_LEADER_EPOCH if
   older, UNKNOWN_LEADER_EPOCH if newer;
5. a proposed ISR equal (as a set) to the current one changes nothing and is
   answered NONE with the current state, whatever its partition epoch (a retry
   whose reply was lost);
   otherwise the proposal's ``partition_epoch`` must be the znode's version:
   INVALID_UPDATE_VERSION;
6. the ISR has no duplicates and contains the leader, and the broker epochs
   are none or one per member: INVALID_REQUEST;
7. every member is assigned and alive, and every *new* member is not in
   controlled shutdown: INELIGIBLE_REPLICA;
8. every *new* member is named with the broker epoch of its current
   registration (KIP-903): INELIGIBLE_REPLICA otherwise. The leader names the
   epoch of the fetch that caught the member up; a member that registered
   again since is another incarnation, which may lack records the first one
   held, and the leader's HW may have moved past them (a resent proposal the
   leader had already dropped). An unknown epoch (0) is refused too: a leader
   that cannot name the incarnation cannot prove it caught up. A proposal
   naming no epochs at all comes from a broker of the previous release (the
   field is new) and is judged without this rule: refusing it would keep every
   ISR led by a broker not yet upgraded from growing, and a rolling upgrade
   waits for each restarted broker to rejoin every ISR (docs/deploy.md).
   Members already in the ISR are not judged by epoch, so a shrink is never
   refused for it.

An accepted proposal is written with ``partition_epoch + 1`` (same leader and
leader epoch) and answered with the committed state; other brokers learn it via
UpdateMetadata.  Each refusal carries the current state so the leader can catch
up.  If a partition being reassigned now has all its target replicas in the
ISR, an ``IsrChanged`` follow-up lets the reassignment finish.
"""

from __future__ import annotations

from ..builder import PlanBuilder
from ..errors import ErrorCode
from ..events import AlterPartitionItem, AlterPartitionReceived, IsrChanged
from ..plan import AlterPartitionReply, AlterPartitionResult


def on_alter_partition(b: PlanBuilder, event: AlterPartitionReceived) -> None:
    info = b.live.get(event.broker_id)
    if info is None or event.broker_epoch != info.broker_epoch:
        b.failed_isr_updates += len(event.items)
        b.reply = AlterPartitionReply(
            ErrorCode.STALE_BROKER_EPOCH,
            f"broker {event.broker_id} with broker epoch {event.broker_epoch} is not registered"
            + ("" if info is None else f" (registered epoch {info.broker_epoch})"),
            (),
        )
        return
    results = []
    finished = []
    for item in event.items:
        result = _alter_one(b, event.broker_id, item)
        results.append(result)
        if result.error is not ErrorCode.NONE:
            b.failed_isr_updates += 1
            continue
        target = b.reassignment_of(item.partition)
        if target is not None and all(x in result.state.isr for x in target):
            finished.append(item.partition)
    b.reply = AlterPartitionReply(ErrorCode.NONE, "", tuple(results))
    if finished:
        b.follow_ups.append(IsrChanged(tuple(finished)))


def _alter_one(b: PlanBuilder, broker_id: int, item: AlterPartitionItem) -> AlterPartitionResult:
    tp = item.partition
    state = b.state_of(tp)
    assignment = b.assignment_of(tp)

    def refuse(code: ErrorCode, message: str) -> AlterPartitionResult:
        return AlterPartitionResult(tp, code, message, state)

    if state is None or assignment is None or b.is_deleting(tp.topic):
        return refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist or is being deleted")
    if state.leader != broker_id:
        return refuse(ErrorCode.NOT_LEADER, f"broker {broker_id} is not the leader of {tp} (leader {state.leader})")
    if item.leader_epoch < state.leader_epoch:
        return refuse(ErrorCode.FENCED_LEADER_EPOCH,
                      f"leader epoch {item.leader_epoch} is older than {state.leader_epoch}")
    if item.leader_epoch > state.leader_epoch:
        return refuse(ErrorCode.UNKNOWN_LEADER_EPOCH,
                      f"leader epoch {item.leader_epoch} is newer than {state.leader_epoch}")
    new_isr = tuple(item.new_isr)
    if sorted(new_isr) == sorted(state.isr):
        return AlterPartitionResult(tp, ErrorCode.NONE, "", state)
    if item.partition_epoch != state.partition_epoch:
        return refuse(ErrorCode.INVALID_UPDATE_VERSION,
                      f"partition epoch {item.partition_epoch} is not the current {state.partition_epoch}")
    if len(set(new_isr)) != len(new_isr) or broker_id not in new_isr:
        return refuse(ErrorCode.INVALID_REQUEST,
                      f"proposed ISR {list(new_isr)} must list the leader {broker_id} once and no member twice")
    if item.new_isr_broker_epochs and len(item.new_isr_broker_epochs) != len(new_isr):
        return refuse(ErrorCode.INVALID_REQUEST, f"{len(item.new_isr_broker_epochs)} broker epochs for the "
                                                 f"{len(new_isr)} members of the proposed ISR {list(new_isr)}")
    for member in new_isr:
        if member not in assignment.replicas or member not in b.live:
            return refuse(ErrorCode.INELIGIBLE_REPLICA,
                          f"broker {member} is not an assigned, live replica of {tp}")
        if not b.live[member].serves(tp):
            return refuse(ErrorCode.INELIGIBLE_REPLICA, f"broker {member}'s replica of {tp} is in an offline "
                                                        f"log directory")
        if member not in state.isr and member in b.shutting_down:
            return refuse(ErrorCode.INELIGIBLE_REPLICA, f"broker {member} is shutting down")
    stale = _stale_new_member(b, item, state.isr)
    if stale is not None:
        return refuse(ErrorCode.INELIGIBLE_REPLICA, stale)
    removed = len(set(state.isr) - set(new_isr))
    added = len(set(new_isr) - set(state.isr))
    b.isr_shrinks += removed > 0
    b.isr_expands += added > 0
    committed = b.write(tp, broker_id, new_isr, notify_replicas=False)
    return AlterPartitionResult(tp, ErrorCode.NONE, "", committed)


def _stale_new_member(b: PlanBuilder, item: AlterPartitionItem, isr: tuple[int, ...]) -> str | None:
    """Why a member joining the ISR is not proven to be its current registration (rule 8), or None."""
    if not item.new_isr_broker_epochs:  # a leader of the previous release, which names none
        return None
    for member, proposed_epoch in zip(item.new_isr, item.new_isr_broker_epochs, strict=True):
        if member in isr:
            continue
        registered_epoch = b.live[member].broker_epoch
        if proposed_epoch == 0:
            return (f"broker {member} joins the ISR without a broker epoch (registered epoch {registered_epoch}); "
                    f"the leader must name the epoch of the fetch that caught it up")
        if proposed_epoch != registered_epoch:
            return (f"broker {member} caught up with broker epoch {proposed_epoch} but is now registered with "
                    f"epoch {registered_epoch}; it must catch up again in its current registration")
    return None
