"""LogDirsOffline's input is checked at the edge: a malformed report is refused with INVALID_REQUEST,
naming what is wrong, and never reaches the controller loop."""

from __future__ import annotations

import pytest

from replog.controller.adapters.servicer import ControllerServicer
from replog.v1 import common_pb2, controller_pb2


class Loop:
    def __init__(self) -> None:
        self.events = []

    def call(self, event, timeout_s):
        self.events.append(event)
        raise AssertionError("a malformed report reached the controller loop")


class Process:
    def __init__(self) -> None:
        self.loop = Loop()


@pytest.mark.parametrize("dirs, partitions, message", [
    ([], [("orders", 0)], "at least one offline log directory"),
    (["/d2", ""], [("orders", 0)], "no empty one"),
    (["/d2"], [("", 0)], "bad partition ''-0"),
    (["/d2"], [("orders", -1)], "bad partition 'orders'--1"),
    (["/d2"], [("t" * 250, 0)], "1 to 249 characters"),
])
def test_a_malformed_report_is_refused_with_the_reason(dirs, partitions, message):
    process = Process()
    request = controller_pb2.LogDirsOfflineRequest(
        broker_id=1, broker_epoch=5, offline_log_dirs=dirs,
        partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in partitions])
    reply = ControllerServicer(process).LogDirsOffline(request, context=None)
    assert reply.error_code == common_pb2.ERROR_CODE_INVALID_REQUEST and message in reply.error_message
    assert not process.loop.events
