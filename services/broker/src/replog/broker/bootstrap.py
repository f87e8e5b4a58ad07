"""Wires the broker's adapters: ZooKeeper session and registration, gRPC server,
tracing and metrics. Nothing is built at import time."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from replog.broker.adapters.registration import register_broker
from replog.broker.adapters.servicers import bindings
from replog.broker.config import BrokerConfig
from replog.common import telemetry
from replog.common.grpc_server import start_server
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


class BrokerProcess:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.zk = ZkClient(
            config.zookeeper,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connect_timeout_ms=config.zookeeper_connect_timeout_ms,
        )
        self.server = None
        self.broker_epoch = 0

    def start(self) -> None:
        config = self.config
        Path(config.log_dir).mkdir(parents=True, exist_ok=True)
        telemetry.init_tracing("replog-broker", str(config.broker_id), config.trace_dir)
        self.zk.start()
        self.zk.ensure_layout()
        self.server = start_server(bindings(self), host=config.host, port=config.port)
        metrics_port = telemetry.start_metrics_server(config.metrics_port, config.host)
        registration = schema.BrokerRegistration(
            broker_id=config.broker_id,
            host=config.host,
            port=self.server.port,
            rack=config.rack or None,
            metrics_port=metrics_port,
            timestamp_ms=int(time.time() * 1000),
        )
        self.broker_epoch = register_broker(self.zk, registration, wait_s=config.zookeeper_session_timeout_ms / 1000 + 2)
        log.info("broker %d up: grpc %s:%d, metrics %d, rack %r", config.broker_id, config.host,
                 self.server.port, metrics_port, config.rack)

    def stop(self) -> None:
        if self.server:
            self.server.stop()
        self.zk.stop()
