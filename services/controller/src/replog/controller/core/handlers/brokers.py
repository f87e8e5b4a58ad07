"""BrokersChanged: brokers died, returned, or restarted (seed A; docs/architecture.md, "A broker failure").

Theory of operation
-------------------
The event carries every registered broker.  Compared with the state:

* dead = registered before, not now -- or now with another ``broker_epoch``
  (it restarted between two watches: Kafka's "bounced" broker, treated as a
  death followed by a return);
* joined = registered now, not before (or bounced).

For the dead, and only for the partitions they hold (the broker index, so a
failure costs O(its partitions)): partitions they led get the offline election,
and they leave every ISR -- all as one batch of writes with one LeaderAndIsr per
surviving broker.  A dead broker stops being "shutting down" and is no longer
awaited by topic deletions (its replica is deleted when it returns, because its
INIT LeaderAndIsr no longer lists the topic).

For the joined: a broker back from an unclean start leaves every ELR (KIP-966);
an INIT LeaderAndIsr with every replica they hold -- they come
back as followers, and each leader adds them to its ISR through AlterPartition
once they catch up -- and full metadata.  Partitions they hold that had no
leader (or were never started) get an election now.  Partitions of topics
being deleted are left alone throughout.
"""

from __future__ import annotations

from replog.common.core.partitions import NO_LEADER

from ..builder import PlanBuilder
from ..events import BrokerResyncRequested, BrokersChanged
from .deletion import forget_dead_replicas, resend_stops
from .leadership import forget_unclean_replicas, initialize_partition, restore_leadership


def on_brokers_changed(b: PlanBuilder, event: BrokersChanged) -> None:
    before = b.base.live_brokers
    after = event.live
    dead = sorted(
        broker_id for broker_id, info in before.items()
        if broker_id not in after or after[broker_id].broker_epoch != info.broker_epoch
    )
    joined = sorted(
        broker_id for broker_id, info in after.items()
        if broker_id not in before or before[broker_id].broker_epoch != info.broker_epoch
    )
    if not dead and not joined and dict(after) == dict(before):
        return
    shutting_down = b.base.shutting_down_brokers.difference(dead)
    unclean = [after[i] for i in joined if after[i].unclean_start or after[i].lost_partitions]
    for info in unclean:  # before any election (a new broker is live during the deaths' ones)
        forget_unclean_replicas(b, info)
    if dead:
        # A restarted broker is dead while its old registration's duties are
        # taken away, and live again only afterwards.
        b.set_live_brokers({i: info for i, info in after.items() if i not in dead}, shutting_down)
        _handle_deaths(b, dead)
    if joined or not dead:
        b.set_live_brokers(after, shutting_down)
    for info in unclean if dead else ():  # again: a bounced broker's death may have put it in an ELR
        forget_unclean_replicas(b, info)
    for broker_id in joined:
        _handle_return(b, broker_id)


def _handle_deaths(b: PlanBuilder, dead: list[int]) -> None:
    by_broker = b.base.partitions_by_broker
    if len(dead) == 1:
        affected = by_broker.get(dead[0], {})
    else:
        affected = {}
        for broker_id in dead:
            affected.update(by_broker.get(broker_id, {}))
    deleting = b.base.topics_being_deleted
    for tp in affected:
        if deleting and tp.topic in deleting:
            continue
        restore_leadership(b, tp)
    forget_dead_replicas(b, set(dead))


def _handle_return(b: PlanBuilder, broker_id: int) -> None:
    b.init_broker(broker_id)
    deleting = b.base.topics_being_deleted
    for tp in b.base.partitions_by_broker.get(broker_id, ()):
        if deleting and tp.topic in deleting:
            continue
        state = b.state_of(tp)
        if state is None:
            initialize_partition(b, tp)
        elif state.leader == NO_LEADER:
            restore_leadership(b, tp)


def on_broker_resync(b: PlanBuilder, event: BrokerResyncRequested) -> None:
    """Resend a broker its whole state after a failed request (a registration since then got
    its INIT already; a broker gone needs nothing), and any deletion it has not confirmed."""
    info = b.live.get(event.broker_id)
    if info is not None and info.broker_epoch == event.broker_epoch:
        b.init_broker(event.broker_id)
        resend_stops(b, event.broker_id)
