"""The partitions this broker's registration says it lost committed records of, until it catches up.

Theory of operation (docs/durability.md, "Honest recovery"; KIP-966's unclean-shutdown flag, smallest form):

Start-up recovery lists the replicas whose log ended below their checkpointed HW
(`ReplicaManager.lost_records`). The broker registers with them
(`BrokerRegistration.lost_partitions`), and the controller elects such a replica
cleanly only when no other ISR member can lead, reporting it as loss when it does.
Once a replica's log end is back at the HW it had checkpointed (it fetched the
records again from a replica that still had them), the mark is stale: a periodic
chore rewrites the registration's data without it. The controller reads the new
data with the next change of the broker list, which is when it next elects for a
dead broker.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Callable

from replog.broker.log import LostRecords
from replog.common.core.partitions import TopicPartition
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


class LostMarks:
    def __init__(self, lost: list[LostRecords], log_end_offset_of: Callable[[TopicPartition], int | None]) -> None:
        self._lost = {TopicPartition(item.topic, item.partition): item for item in lost}
        self._log_end_offset_of = log_end_offset_of  # None: the replica is not hosted here any more
        self._lock = threading.Lock()

    def partitions(self) -> tuple[tuple[str, int], ...]:
        with self._lock:
            return tuple((tp.topic, tp.partition) for tp in sorted(self._lost))

    def drop_caught_up(self) -> bool:
        """Forget the replicas whose log is back at their checkpointed HW (or gone); True if any went."""
        with self._lock:
            caught_up = []
            for tp, item in self._lost.items():
                end = self._log_end_offset_of(tp)
                if end is None or end >= item.checkpointed_high_watermark:
                    caught_up.append((tp, item))
            for tp, item in caught_up:
                del self._lost[tp]
                log.info("%s: back at its checkpointed high watermark %d; no longer marked as having lost "
                         "committed records", tp, item.checkpointed_high_watermark)
            return bool(caught_up)


def rewrite_registration(zk: ZkClient, registration: schema.BrokerRegistration,
                         lost_partitions: tuple[tuple[str, int], ...]) -> schema.BrokerRegistration:
    """Set the registration's data to carry `lost_partitions` (the znode, and so the broker epoch, stay)."""
    updated = dataclasses.replace(registration, lost_partitions=lost_partitions)
    zk.kazoo.set(schema.broker_path(registration.broker_id), updated.encode())
    return updated
