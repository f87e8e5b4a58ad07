"""A leader gives up leadership of a partition its scrubber found damaged (issue 40).

Theory of operation
-------------------
The scrubber (maintenance/scrubber.py) found a rolled segment that fails its check on a replica this
broker leads. The leader serves nothing that fails the check, but only as a follower can it cut its
log and fetch the records again, and a follower holding them intact is the better leader. So the
scrubber hands the partition to `resign`, which only records it and wakes a thread of its own (the
scrubber runs on the checkpointer's thread, which must not wait on the controller).

That thread asks the active controller (ControlledShutdown naming the partitions, controller_link.py)
to move each leadership to another live ISR member; the broker leaves that ISR, gets LeaderAndIsr as a
follower, and its scrubber's next pass over the segment takes the follower's path. The call is
repeated, `RETRY_BACKOFF_S` apart, until the controller answers NONE or the broker no longer leads the
partition (another change moved it first) or stops. A partition the controller lists as remaining (no
other ISR member could take it) stays led here, serving what verifies; it is not asked again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from replog.broker.control.controller_link import ControllerLink, ControllerUnavailable
from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import ReplicaRole
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.common.core.partitions import TopicPartition

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.5
PARTITIONS_PER_REQUEST_MAX = 1000  # below the controller's bound on one request (controller.proto)


class Resignations:
    def __init__(self, *, lookup: Callable[[TopicPartition], HostedPartition | None], controller: ControllerLink,
                 broker_id: int, broker_epoch_of: Callable[[], int]) -> None:
        self._lookup = lookup
        self._controller = controller
        self._broker_id = broker_id
        self._broker_epoch_of = broker_epoch_of
        self._lock = threading.Lock()
        self._pending: set[TopicPartition] = set()
        self._stopping = threading.Event()
        self._sender: threading.Thread | None = None

    def resign(self, topic_partition: TopicPartition) -> None:
        """Ask, in the background, for another ISR member to lead `topic_partition`."""
        with self._lock:
            self._pending.add(topic_partition)
            if self._sender is None or not self._sender.is_alive():
                self._sender = threading.Thread(target=self._send_until_answered, name="resign-leadership",
                                                daemon=True)
                self._sender.start()

    def stop(self) -> None:
        self._stopping.set()

    def pending(self) -> tuple[TopicPartition, ...]:
        """The partitions still to be asked about (the controller has not answered NONE yet)."""
        with self._lock:
            return tuple(sorted(self._pending))

    def _send_until_answered(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                self._pending = {tp for tp in self._pending if self._leads(tp)}
                asked = tuple(sorted(self._pending))[:PARTITIONS_PER_REQUEST_MAX]
                if not asked:
                    self._sender = None
                    return
            if self._ask(asked):
                with self._lock:
                    self._pending.difference_update(asked)
            else:
                self._stopping.wait(RETRY_BACKOFF_S)

    def _leads(self, topic_partition: TopicPartition) -> bool:
        hosted = self._lookup(topic_partition)
        return hosted is not None and hosted.usable and hosted.replica.state.role is ReplicaRole.LEADER

    def _ask(self, partitions: tuple[TopicPartition, ...]) -> bool:
        names = ", ".join(map(str, partitions))
        log.info("asking the controller to move leadership of %s (damaged) to another ISR member", names)
        try:
            reply = self._controller.resign_leadership(self._broker_id, self._broker_epoch_of(), partitions)
        except ControllerUnavailable as exc:
            log.info("cannot give up leadership of %s yet: %s", names, exc)
            return False
        if reply.error_code is not ErrorCode.NONE:
            log.info("the controller did not move leadership of %s (will ask again): %s %s", names,
                     reply.error_code.name, reply.error_message)
            return False
        for tp in partitions:
            if tp in reply.remaining:
                log.error("%s: no other ISR member can lead it; this broker keeps leading it and serves only "
                          "batches that pass their check", tp)
            else:
                log.warning("%s: leadership moved to another ISR member; this replica follows, cuts the damaged "
                            "segment and fetches it again", tp)
        return True
