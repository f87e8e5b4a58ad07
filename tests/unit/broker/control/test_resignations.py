"""A leader gives up leadership of a damaged replica (control/resignations.py): the request is repeated
until the controller answers NONE, and not sent for a partition the broker no longer leads."""

from __future__ import annotations

import threading

from replog.broker.control.controller_link import ControllerUnavailable, ShutdownReply
from replog.broker.control.resignations import Resignations
from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import ReplicaRole
from replog.common.core.partitions import TopicPartition
from tests.unit.broker.thread_helpers import wait_for

ORDERS_0 = TopicPartition("orders", 0)


class Replica:
    def __init__(self, role: ReplicaRole) -> None:
        self.usable = True
        self.replica = self
        self.state = self
        self.role = role


class Controller:
    """Gives the `answers` in turn: a ShutdownReply, or an exception to raise."""

    def __init__(self, answers) -> None:
        self.asked: list[tuple] = []
        self._answers = list(answers)
        self.done = threading.Event()

    def resign_leadership(self, broker_id, broker_epoch, partitions):
        self.asked.append((broker_id, broker_epoch, tuple(partitions)))
        answer = self._answers.pop(0)
        if not self._answers:
            self.done.set()
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_the_request_is_repeated_until_the_controller_answers_none(tmp_path):
    controller = Controller([ControllerUnavailable("no controller"), ShutdownReply(ErrorCode.NOT_CONTROLLER, "", ()),
                             ShutdownReply(ErrorCode.NONE, "", ())])
    replicas = {ORDERS_0: Replica(ReplicaRole.LEADER)}
    resignations = Resignations(lookup=replicas.get, controller=controller, broker_id=1, broker_epoch_of=lambda: 77)
    resignations.resign(ORDERS_0)
    wait_for(controller.done.is_set, "the third request")
    wait_for(lambda: resignations.pending() == (), "nothing left to ask once answered")
    assert controller.asked == [(1, 77, (ORDERS_0,))] * 3
    resignations.stop()


def test_nothing_is_asked_for_a_partition_the_broker_no_longer_leads(tmp_path):
    controller = Controller([ShutdownReply(ErrorCode.NONE, "", ())])
    replicas = {ORDERS_0: Replica(ReplicaRole.FOLLOWER)}
    resignations = Resignations(lookup=replicas.get, controller=controller, broker_id=1, broker_epoch_of=lambda: 77)
    resignations.resign(ORDERS_0)
    resignations.resign(TopicPartition("gone", 0))
    wait_for(lambda: resignations.pending() == (), "the sender to find nothing to ask")
    assert controller.asked == []
    resignations.stop()
