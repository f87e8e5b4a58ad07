"""Wires the gateway's adapters: ZooKeeper session, gRPC server, tracing, metrics.

The gateway listens before it joins ZooKeeper, however long ZooKeeper takes to answer: its
health says NOT_SERVING and its service refuses with UNAVAILABLE (readiness_gate.py) until then."""

from __future__ import annotations

import logging
import random
import threading

from replog.common import gc_policy, telemetry
from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.enforcement import Enforcer
from replog.common.acls.store import AclWatcher
from replog.common.channels import ChannelCache
from replog.common.clock import SystemClock
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
from replog.gateway.config import GatewayConfig
from replog.gateway.deps import GatewayDeps
from replog.gateway.metrics import GatewayMetrics
from replog.gateway.servicer import AdminServicer
from replog.v1 import admin_pb2, admin_pb2_grpc

log = logging.getLogger(__name__)


class GatewayProcess:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        credentials = load_credentials(config.zookeeper_credentials_file, znode_acls.GATEWAY_ROLE)
        self.zk = ZkClient(
            ZkEndpoint(config.zookeeper, credentials, zookeeper_tls_files(config)),
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connect_backoff_max_ms=config.zookeeper_connect_backoff_max_ms,
        )
        self.gate = ReadinessGate(f"gateway {config.gateway_id} is waiting for ZooKeeper at {config.zookeeper}")
        self.tls = tls_files(config, Principal("gateway", config.gateway_id))  # None with --insecure
        self.channels = ChannelCache(self.tls)
        self.authorizer = Authorizer(config.super_user_principals)
        self.acl_watcher = AclWatcher(self.zk, self.authorizer)
        self.server = None

    def start(self, stopping: threading.Event) -> bool:
        """Listen, wait for ZooKeeper, then serve. False when `stopping` was set before ZooKeeper
        answered: nothing but the server was started."""
        telemetry.init_tracing("replog-gateway", self.config.gateway_id, self.config.trace_dir)
        process_metrics = ProcessMetrics(metric_table.GATEWAY_INFO, {
            "gateway_id": self.config.gateway_id, "version": release("replog-gateway")})
        process_metrics.watch_certificates(self.tls)
        self.zk.add_session_listener(process_metrics.on_zookeeper_session)
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
                AdminServicer(deps, GatewayMetrics()),
            )],
            host=self.config.host,
            port=self.config.port,
            serving=False,
            interceptors=[self.gate],
            tls=self.tls,
            concurrent_rpcs_max=self.config.grpc_concurrent_rpcs_max,
            edge=self.config, enforcer=Enforcer(self.authorizer), super_users=self.config.super_user_principals,
        )
        # Scraped from now on, also while waiting for ZooKeeper (replog_zookeeper_connected says so).
        metrics_port = telemetry.start_metrics_server(self.config.metrics_port, self.config.host)
        if not self.zk.connect(stopping):
            return False
        self.zk.ensure_layout()
        self.acl_watcher.start()
        gc_policy.settle()  # what start-up built lives as long as the process, as on the broker
        self.gate.open()
        self.server.set_serving(True)
        log.info("gateway up: grpc %s:%d, metrics %d", self.config.host, self.server.port, metrics_port)
        return True

    def stop(self) -> None:
        if self.server:
            self.server.stop()
        self.acl_watcher.stop()
        self.channels.close()
        self.zk.stop()
