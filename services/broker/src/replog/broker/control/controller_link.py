"""How the broker reaches the active controller: /controller names its host and port.

A kazoo DataWatch keeps the address current; calls go through the shared
channel cache with the current trace context in their metadata. Callers retry:
`ControllerUnavailable` (no controller seated, or the RPC failed in transport)
and a NOT_CONTROLLER answer both mean "ask again shortly".
"""

from __future__ import annotations

import logging
import threading

import grpc
from kazoo.recipe.watchers import DataWatch

from replog.common import telemetry
from replog.common.channels import CONTROL_RPC_TIMEOUT_S, ChannelCache
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.v1 import controller_pb2, controller_pb2_grpc

log = logging.getLogger(__name__)


class ControllerUnavailable(Exception):
    """No controller could be asked (none seated, or the call failed in transport)."""


class ControllerLink:
    def __init__(self, zk: ZkClient, channels: ChannelCache) -> None:
        self._zk = zk
        self._channels = channels
        self._lock = threading.Lock()
        self._address: str | None = None
        self._controller_id = -1

    def start(self) -> None:
        DataWatch(self._zk.kazoo, schema.CONTROLLER, self._on_controller)

    def _on_controller(self, data, stat) -> None:
        address, controller_id = None, -1
        if data:
            try:
                record = schema.ControllerRecord.decode(data)
                controller_id = record.controller_id
                if record.host and record.port:
                    address = f"{record.host}:{record.port}"
            except schema.ZkDataError as exc:
                log.warning("unreadable %s: %s", schema.CONTROLLER, exc)
        with self._lock:
            self._address, self._controller_id = address, controller_id
        log.info("active controller: %s (%s)", controller_id, address or "unknown address")

    def _stub(self) -> controller_pb2_grpc.ControllerServiceStub:
        with self._lock:
            address = self._address
        if address is None:
            raise ControllerUnavailable("no active controller in /controller")
        return controller_pb2_grpc.ControllerServiceStub(self._channels.get(address))

    def alter_partition(
        self, request: controller_pb2.AlterPartitionRequest, timeout_s: float = CONTROL_RPC_TIMEOUT_S
    ) -> controller_pb2.AlterPartitionResponse:
        try:
            return self._stub().AlterPartition(request, timeout=timeout_s, metadata=telemetry.inject_metadata())
        except grpc.RpcError as exc:
            raise ControllerUnavailable(f"AlterPartition: {exc.code().name}: {exc.details()}") from None

    def controlled_shutdown(
        self, request: controller_pb2.ControlledShutdownRequest, timeout_s: float = CONTROL_RPC_TIMEOUT_S
    ) -> controller_pb2.ControlledShutdownResponse:
        try:
            return self._stub().ControlledShutdown(request, timeout=timeout_s, metadata=telemetry.inject_metadata())
        except grpc.RpcError as exc:
            raise ControllerUnavailable(f"ControlledShutdown: {exc.code().name}: {exc.details()}") from None
