"""ControlledShutdown naming partitions to give up: malformed input is refused with INVALID_REQUEST,
naming what is wrong, and never reaches the controller loop (issue 40)."""

from __future__ import annotations

import pytest

from replog.controller.adapters.servicer import RESIGN_PARTITIONS_MAX, ControllerServicer
from replog.v1 import common_pb2, controller_pb2


class Loop:
    def __init__(self) -> None:
        self.events = []

    def call(self, event, timeout_s):
        self.events.append(event)
        raise AssertionError("a malformed request reached the controller loop")


class Process:
    def __init__(self) -> None:
        self.loop = Loop()


@pytest.mark.parametrize("partitions, message", [
    ([("", 0)], "bad partition ''-0"),
    ([("orders", -1)], "bad partition 'orders'--1"),
    ([("t" * 250, 0)], "1 to 249 characters"),
    ([("orders", p) for p in range(RESIGN_PARTITIONS_MAX + 1)], f"more than {RESIGN_PARTITIONS_MAX}"),
])
def test_a_malformed_request_is_refused_with_the_reason(partitions, message):
    process = Process()
    request = controller_pb2.ControlledShutdownRequest(
        broker_id=1, broker_epoch=5,
        partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in partitions])
    reply = ControllerServicer(process).ControlledShutdown(request, context=None)
    assert reply.error_code == common_pb2.ERROR_CODE_INVALID_REQUEST and message in reply.error_message
    assert not process.loop.events
