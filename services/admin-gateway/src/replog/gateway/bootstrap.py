"""Wires the gateway's adapters: ZooKeeper session, gRPC server, tracing, metrics."""

from __future__ import annotations

import logging
import random

from replog.common import telemetry
from replog.common.channels import ChannelCache
from replog.common.clock import SystemClock
from replog.common.grpc_server import ServiceBinding, start_server
from replog.common.zk.client import ZkClient
from replog.gateway.config import GatewayConfig
from replog.gateway.deps import GatewayDeps
from replog.gateway.servicer import AdminServicer
from replog.v1 import admin_pb2, admin_pb2_grpc

log = logging.getLogger(__name__)


class GatewayProcess:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.zk = ZkClient(
            config.zookeeper,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connect_timeout_ms=config.zookeeper_connect_timeout_ms,
        )
        self.channels = ChannelCache()
        self.server = None

    def start(self) -> None:
        telemetry.init_tracing("replog-gateway", self.config.gateway_id, self.config.trace_dir)
        self.zk.start()
        self.zk.ensure_layout()
        deps = GatewayDeps(
            zk=self.zk,
            channels=self.channels,
            rng=random.Random(),   # placement draws start index and shift when the request fixes neither
            clock=SystemClock(),
            broker_rpc_timeout_s=self.config.broker_rpc_timeout_ms / 1000.0,
        )
        self.server = start_server(
            [ServiceBinding(
                admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
                admin_pb2_grpc.add_AdminServiceServicer_to_server,
                AdminServicer(deps),
            )],
            host=self.config.host,
            port=self.config.port,
        )
        metrics_port = telemetry.start_metrics_server(self.config.metrics_port, self.config.host)
        log.info("gateway up: grpc %s:%d, metrics %d", self.config.host, self.server.port, metrics_port)

    def stop(self) -> None:
        if self.server:
            self.server.stop()
        self.channels.close()
        self.zk.stop()
