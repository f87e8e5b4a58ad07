"""LogDirsOffline: a broker's log directory failed; its replicas there are offline (issue 40).

Theory of operation
-------------------
Kafka's log directory failure, in the ZooKeeper-era shape.  A broker that keeps serving other
directories names, with its current ``broker_epoch`` (without it any caller could take any broker's
replicas offline), every replica it had in the failed ones.  It has recorded the same set in its
registration first, so a newly elected controller loads it with the broker (``BrokerInfo``).

The controller marks those replicas offline in the broker's ``BrokerInfo.offline_partitions``, and
from then on ``BrokerInfo.serves`` is False for them: ``restore_leadership`` treats such a replica
as dead -- a partition it led gets the offline election among the others, and it leaves the ISR --
and no election, ISR expansion (AlterPartition) or new partition counts it, until the broker
registers again (a restart checks the directory anew).  Each such replica also gets
StopReplica(delete=False), so the broker stops following it.  A partition with no other replica
to lead it keeps a leaderless state (``NO_LEADER``), as after a broker death.

Repeating the report is harmless: the set only grows, and partitions already moved are left as
they are.  Replicas of topics being deleted are left to the deletion.
"""

from __future__ import annotations

import dataclasses

from ..builder import PlanBuilder
from ..errors import ErrorCode
from ..events import LogDirsOfflineReported
from ..plan import LogDirsOfflineReply
from .leadership import restore_leadership


def on_log_dirs_offline(b: PlanBuilder, event: LogDirsOfflineReported) -> None:
    broker_id = event.broker_id
    info = b.live.get(broker_id)
    if info is None:
        b.reply = LogDirsOfflineReply(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not registered")
        return
    if event.broker_epoch != info.broker_epoch:
        b.reply = LogDirsOfflineReply(
            ErrorCode.STALE_BROKER_EPOCH,
            f"broker epoch {event.broker_epoch} is not the registered {info.broker_epoch}")
        return
    held = b.base.partitions_by_broker.get(broker_id, {})
    offline = frozenset(tp for tp in event.partitions if tp in held)
    if not offline <= info.offline_partitions:
        live = dict(b.live)
        live[broker_id] = dataclasses.replace(info, offline_partitions=info.offline_partitions | offline)
        b.set_live_brokers(live, b.shutting_down)
    for tp in sorted(offline):
        if b.is_deleting(tp.topic):
            continue
        state = restore_leadership(b, tp)
        if state is not None:
            b.stop_replica(tp, broker_id, delete=False, leader_epoch=state.leader_epoch)
    b.reply = LogDirsOfflineReply(ErrorCode.NONE, "")
