"""Wires the controller's adapters: ZooKeeper session, seat elector, gRPC server,
tracing and metrics. Nothing is built at import time."""

from __future__ import annotations

import logging

from replog.common import telemetry
from replog.common.grpc_server import ServiceBinding, start_server
from replog.common.zk.client import ZkClient
from replog.controller.adapters.seat import Seat, SeatElector
from replog.controller.adapters.servicer import ControllerServicer
from replog.controller.config import ControllerConfig
from replog.v1 import controller_pb2, controller_pb2_grpc

log = logging.getLogger(__name__)


class ControllerProcess:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.zk = ZkClient(
            config.zookeeper,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connect_timeout_ms=config.zookeeper_connect_timeout_ms,
        )
        self.servicer = ControllerServicer(self)
        self.elector: SeatElector | None = None
        self.server = None
        self.seat: Seat | None = None

    def start(self) -> None:
        telemetry.init_tracing("replog-controller", str(self.config.controller_id), self.config.trace_dir)
        self.zk.start()
        self.zk.ensure_layout()
        self.server = start_server(
            [ServiceBinding(
                controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name,
                controller_pb2_grpc.add_ControllerServiceServicer_to_server,
                self.servicer,
            )],
            host=self.config.host,
            port=self.config.port,
        )
        metrics_port = telemetry.start_metrics_server(self.config.metrics_port, self.config.host)
        log.info("controller %d: grpc %s:%d, metrics %d", self.config.controller_id, self.config.host,
                 self.server.port, metrics_port)
        self.elector = SeatElector(self.zk, self.config.controller_id, (self.config.host, self.server.port), self._on_elected, self._on_resigned)
        self.elector.start()

    def _on_elected(self, seat: Seat) -> None:
        self.seat = seat

    def _on_resigned(self) -> None:
        self.seat = None

    @property
    def active(self) -> bool:
        return self.seat is not None

    def stop(self) -> None:
        if self.elector:
            self.elector.stop()
        if self.server:
            self.server.stop()
        self.zk.stop()
