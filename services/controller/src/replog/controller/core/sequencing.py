"""The order of a plan's steps, and the first wave.

Theory of operation
-------------------
A plan is carried out as Write (every record), Apply, Send (every request),
then the answer (``steps.py`` defines the steps).  Two refinements:

The first wave.  A plan that writes only existing partitions' states and moves
some leaders (a broker failure, a controlled shutdown, an election) writes the
new leader epochs first and sends their LeaderAndIsr at once, at most one per
broker, with an UpdateMetadata of the same partitions to every live broker:
clients find leaders in any broker's metadata.  The ISR-only changes are
written once the brokers have answered that wave, or after ``HEAD_START_S``;
then the plan goes on as usual.  A partition without a leader serves nothing,
while one whose ISR still names a dead follower holds back only its acks=all
writes: so the leaderless go first, and the others wait no longer than the
head start.  The plan's own UpdateMetadata repeats the first wave's partitions,
less what a broker that answered the wave already has (``without_delivered``).
Why, and what each part measured: docs/perf/first-wave.md.

* An INIT request or one to a stopping broker is not in the first wave (the
  stopping broker's new role, follower, waits for nobody).
* The first wave goes out before Apply, so it may name only brokers the old
  state knows.  When it names one that registered in this very event, the new
  leader epochs are still written first, but every request goes after Apply.
* A plan that creates partitions or changes assignments has no first wave:
  its writes must land in the crash-safe order before anyone is told.

The answer.  Most RPCs are answered once every broker has answered.  A broker
in controlled shutdown may go as soon as everything is written and the brokers
taking over its leaderships have answered (those in the first wave, or every
other broker without one); its own requests, followers and ISR-only changes do
not hold it.  Kafka does not wait for any broker at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from replog.common.core.partitions import TopicPartition

from .model import BrokerInfo, ControllerState
from .plan import LeaderAndIsrRequest, PartitionDecision, Reply, SetPartitionState, UpdateMetadata, ZkWrite
from .steps import NEW_LEADERS, REQUESTS, Answer, Apply, Await, Send, Step, Write, check_order

HEAD_START_S = 1.0  # how long the ISR-only writes wait for the brokers taking new leaderships


def plan_steps(
    writes: tuple[ZkWrite, ...],
    requests: Send,
    reply: Reply | None,
    *,
    base: ControllerState,
    live: Mapping[int, BrokerInfo],
    shutting_down: frozenset[int],
    changed: list[PartitionDecision],
    stopping_broker: int | None,
) -> tuple[Step, ...]:
    """The plan's steps.

    ``requests`` is every request of the plan, ``changed`` the decisions of the
    partitions it changed, ``base`` the state it was decided on, ``live`` and
    ``shutting_down`` the brokers after it.  ``stopping_broker``: the answer is
    to that broker's controlled shutdown.
    """
    steps: list[Step] = []
    first_wave: Send | None = None
    moved = _new_leader_epochs(writes, base)
    if moved:
        writes = (tuple(w for w in writes if w.partition in moved)
                  + tuple(w for w in writes if w.partition not in moved))
        first, rest = _split(requests.leader_and_isr, moved, shutting_down)
        if first and _known_before_apply(first, base.live_brokers):
            first_wave = Send(NEW_LEADERS, first, _first_wave_metadata(first, changed, live))
            steps += [Write(writes[:len(moved)]), first_wave, Await(NEW_LEADERS, bound_s=HEAD_START_S)]
            writes = writes[len(moved):]
        else:
            rest = _merged(first + rest)
        requests = Send(REQUESTS, rest, requests.update_metadata, requests.stop_replica,
                        omit_delivered_by=NEW_LEADERS if first_wave else None)
    if writes:
        steps.append(Write(writes))
    steps.append(Apply())
    sent = requests if requests.leader_and_isr or requests.update_metadata or requests.stop_replica else None
    if sent is not None:
        steps.append(sent)
    steps += _answer(reply, first_wave, sent, stopping_broker)
    result = tuple(steps)
    check_order(result)
    return result


def _answer(reply: Reply | None, first_wave: Send | None, requests: Send | None,
            stopping_broker: int | None) -> list[Step]:
    """Answer after every broker answered; to a controlled shutdown, once the brokers taking
    over its leaderships did (those of the first wave, else every other broker)."""
    every_answer: list[Step] = [Await()] if first_wave or requests else []
    if stopping_broker is None:
        return [*every_answer, Answer(reply)]
    takers: list[Step] = []
    if first_wave is not None:
        leaders = {r.broker_id for r in first_wave.leader_and_isr
                   if any(d.state.leader == r.broker_id for d in r.partitions)}
        takers = [Await(NEW_LEADERS, brokers=frozenset(leaders - {stopping_broker}))]
    elif requests is not None:
        takers = [Await(REQUESTS, brokers=requests.broker_ids() - {stopping_broker})]
    return [*takers, Answer(reply), *every_answer]


def _new_leader_epochs(writes: tuple[ZkWrite, ...], base: ControllerState) -> set[TopicPartition]:
    """The partitions whose leader epoch the writes raise, when the writes are only
    existing partitions' states (else none: no first wave)."""
    if not writes or any(type(w) is not SetPartitionState for w in writes):
        return set()
    states = base.partition_states
    return {w.partition for w in writes if w.state.leader_epoch != states[w.partition].leader_epoch}


def _split(
    requests: tuple[LeaderAndIsrRequest, ...], moved: set[TopicPartition], shutting_down: frozenset[int],
) -> tuple[tuple[LeaderAndIsrRequest, ...], tuple[LeaderAndIsrRequest, ...]]:
    """(the first wave's LeaderAndIsr: the moved partitions, the others), each at most one per broker."""
    first, rest = [], []
    for request in requests:
        if request.init or request.broker_id in shutting_down:
            rest.append(request)
            continue
        now = tuple(d for d in request.partitions if d.partition in moved)
        later = tuple(d for d in request.partitions if d.partition not in moved)
        if now:
            first.append(LeaderAndIsrRequest(request.broker_id, request.broker_epoch, False, now))
        if later:
            rest.append(LeaderAndIsrRequest(request.broker_id, request.broker_epoch, False, later))
    return tuple(first), tuple(rest)


def _merged(requests: tuple[LeaderAndIsrRequest, ...]) -> tuple[LeaderAndIsrRequest, ...]:
    """The split undone: one request per broker again, the moved partitions first."""
    by_broker: dict[int, LeaderAndIsrRequest] = {}
    for request in requests:
        held = by_broker.get(request.broker_id)
        by_broker[request.broker_id] = request if held is None else LeaderAndIsrRequest(
            held.broker_id, held.broker_epoch, held.init or request.init, held.partitions + request.partitions)
    return tuple(sorted(by_broker.values(), key=lambda r: r.broker_id))


def _known_before_apply(requests: tuple[LeaderAndIsrRequest, ...], known: Mapping[int, BrokerInfo]) -> bool:
    """Every broker the requests go to or name as leader is in the state before the plan.
    (A Startup plan never gets here: every live broker gets INIT.)"""
    return all(r.broker_id in known and all(d.state.leader in known for d in r.partitions if d.state.leader >= 0)
               for r in requests)


def _first_wave_metadata(
    first: tuple[LeaderAndIsrRequest, ...], changed: list[PartitionDecision], live: Mapping[int, BrokerInfo],
) -> tuple[UpdateMetadata, ...]:
    """The first wave's partitions, as an UpdateMetadata delta to every live broker."""
    moved = {d.partition for request in first for d in request.partitions}
    partitions = tuple(d for d in changed if d.partition in moved)
    if not partitions:
        return ()
    ids = tuple(sorted(live))
    return (UpdateMetadata(ids, tuple(live[b] for b in ids), partitions, (), False),)


def without_delivered(
    updates: tuple[UpdateMetadata, ...], delivered: tuple[UpdateMetadata, ...], took_delivered: frozenset[int]
) -> tuple[UpdateMetadata, ...]:
    """The plan's UpdateMetadata less what the first wave already delivered.

    A broker in ``took_delivered`` answered the first wave: its copy leaves out
    every decision ``delivered`` carried (the same decision, not merely the same
    partition).  Every other broker gets the update whole: it may have missed
    the first wave.
    """
    carried = {d.partition: d for update in delivered for d in update.partitions}
    if not carried or not took_delivered:
        return updates
    out: list[UpdateMetadata] = []
    for update in updates:
        slimmed = tuple(b for b in update.broker_ids if b in took_delivered)
        if update.full or not slimmed:
            out.append(update)
            continue
        rest = tuple(b for b in update.broker_ids if b not in took_delivered)
        if rest:
            out.append(UpdateMetadata(rest, update.live_brokers, update.partitions, update.deleted_topics, False))
        partitions = tuple(d for d in update.partitions if carried.get(d.partition) is not d)
        out.append(UpdateMetadata(slimmed, update.live_brokers, partitions, update.deleted_topics, False))
    return tuple(out)
