"""The gateway's configuration keys (the one owner of each; the TLS keys are
security/settings.py's, shared by every service, the address keys listen.py's)."""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.acls.settings import AclSettings
from replog.common import ports
from replog.common.edge.settings import EdgeSettings
from replog.common.config import one_of, positive, setting, tcp_port, zookeeper_connect
from replog.common.listen import ListenSettings
from replog.common.security.settings import TlsSettings
from replog.common.zk.auth import credentials_file_setting
from replog.common.zk.tls import ZkTlsSettings


@dataclass(frozen=True)
class GatewayConfig(TlsSettings, ZkTlsSettings, AclSettings, EdgeSettings, ListenSettings):
    gateway_id: str = setting("1", "instance name of this gateway (for logs and traces)")
    zookeeper: str = setting("127.0.0.1:2181", "ZooKeeper connect string host:port[,host:port][/chroot]", zookeeper_connect)
    zookeeper_credentials_file: str = credentials_file_setting()
    port: int = setting(ports.GATEWAY.grpc, "gRPC port (0 picks a free one)", tcp_port)
    metrics_port: int = setting(ports.GATEWAY.metrics, "Prometheus /metrics port (0 picks a free one)", tcp_port)
    zookeeper_session_timeout_ms: int = setting(6000, "ZooKeeper session timeout", positive)
    zookeeper_connect_backoff_max_ms: int = setting(
        2000, "longest pause between attempts to reach ZooKeeper, at start and after losing it "
              "(the process waits for ZooKeeper as long as it takes, NOT_SERVING meanwhile)", positive)
    broker_rpc_timeout_ms: int = setting(2000, "deadline of one call to a broker for log stats (slower counts as unknown)", positive)
    trace_dir: str = setting("", "directory for JSON-lines span files, written also while OTEL_EXPORTER_OTLP_ENDPOINT "
                             "sends spans to a collector (empty: no files)")
    log_level: str = setting("info", "log level", one_of("debug", "info", "warning", "error"))
    log_format: str = setting("json", "log line format: json (one object per line) or text; a line written inside a "
                              "span carries its trace_id and span_id", one_of("json", "text"))
    grpc_concurrent_rpcs_max: int = setting(
        512, "RPCs open at once (admin calls, election waits, topology export streams and every client's "
             "channel keeper); more are refused with RESOURCE_EXHAUSTED", positive)
