"""Wires the controller's adapters: ZooKeeper session, seat elector, event loop,
gRPC server, tracing and metrics. Nothing is built at import time.

The controller listens before it joins ZooKeeper, however long ZooKeeper takes to answer: its
health says NOT_SERVING and its service refuses with UNAVAILABLE (readiness_gate.py) until then."""

from __future__ import annotations

import logging
import threading

from replog.common import rpc_spans, telemetry
from replog.common.grpc_server import ServiceBinding, start_server
from replog.common.metrics import table as metric_table
from replog.common.metrics.process import ProcessMetrics, release
from replog.common.readiness_gate import ReadinessGate
from replog.common.security.principal import Principal
from replog.common.security.settings import tls_files
from replog.common.zk.auth import ZkEndpoint, load_credentials
from replog.common.zk.client import ZkClient
from replog.common.zk.schema import znode_acls
from replog.common.zk.tls import zookeeper_tls_files
from replog.controller.adapters.event_loop import ControllerLoop
from replog.controller.adapters.seat import SeatElector
from replog.controller.adapters.servicer import ControllerServicer
from replog.controller.config import ControllerConfig
from replog.controller.core.model import ControllerSettings
from replog.v1 import controller_pb2, controller_pb2_grpc

log = logging.getLogger(__name__)
SERVICE = controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name


class ControllerProcess:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        credentials = load_credentials(config.zookeeper_credentials_file, znode_acls.CONTROLLER_ROLE)
        self.zk = ZkClient(
            ZkEndpoint(config.zookeeper, credentials, zookeeper_tls_files(config)),
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connect_backoff_max_ms=config.zookeeper_connect_backoff_max_ms,
        )
        settings = ControllerSettings(
            auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
            leader_imbalance_per_broker_percentage=config.leader_imbalance_per_broker_percentage,
            leader_imbalance_check_interval_ms=config.leader_imbalance_check_interval_ms,
        )
        # None with --insecure; else the certificate must be valid for the host peers dial
        self.tls = tls_files(config, Principal("controller", str(config.controller_id)), config.published_host)
        self.loop = ControllerLoop(
            self.zk, config.controller_id, settings, queue_size_max=config.event_queue_size_max,
            session_timeout_ms=config.zookeeper_session_timeout_ms, give_up=self._give_up, tls=self.tls,
        )
        self.servicer = ControllerServicer(self)
        self.gate = ReadinessGate(f"controller {config.controller_id} is waiting for ZooKeeper at {config.zookeeper}")
        self.elector: SeatElector | None = None
        self.server = None

    def start(self, stopping: threading.Event) -> bool:
        """Listen, wait for ZooKeeper, then serve and run for the seat. False when `stopping` was set
        before ZooKeeper answered: nothing but the server was started."""
        config = self.config
        telemetry.init_tracing("replog-controller", str(config.controller_id), config.trace_dir)
        process_metrics = ProcessMetrics(metric_table.CONTROLLER_INFO, {
            "controller_id": str(config.controller_id), "version": release("replog-controller")})
        process_metrics.watch_certificates(self.tls)
        self.zk.add_session_listener(process_metrics.on_zookeeper_session)
        self.server = start_server(
            [ServiceBinding(
                SERVICE,
                controller_pb2_grpc.add_ControllerServiceServicer_to_server,
                rpc_spans.traced_servicer(self.servicer, SERVICE),
            )],
            host=config.host,
            port=config.port,
            serving=False,
            interceptors=[self.gate],
            tls=self.tls,
            concurrent_rpcs_max=config.grpc_concurrent_rpcs_max,
            edge=config,
        )
        # Scraped from now on, also while waiting for ZooKeeper (replog_zookeeper_connected says so).
        metrics_port = telemetry.start_metrics_server(config.metrics_port, config.host)
        if not self.zk.connect(stopping):
            return False
        self.zk.ensure_layout()
        self.gate.open()
        self.server.set_serving(True)
        log.info("controller %d: grpc %s:%d (advertised as %s), metrics %d", config.controller_id, config.host,
                 self.server.port, config.published_host, metrics_port)
        self.loop.start()
        self.elector = SeatElector(self.zk, config.controller_id, (config.published_host, self.server.port),
                                   self.loop.on_elected, self.loop.on_resigned)
        self.elector.start()
        return True

    def _give_up(self, reason: str) -> None:
        if self.elector is not None:
            self.elector.give_up(reason)

    @property
    def active(self) -> bool:
        return self.loop.active

    def stop(self) -> None:
        if self.elector:  # the loop and the elector start together, once ZooKeeper has answered
            self.elector.stop()
            self.loop.stop()
        if self.server:
            self.server.stop()
        self.zk.stop()
