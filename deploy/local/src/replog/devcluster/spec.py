"""What a local cluster is made of (`ClusterSpec`) and what each of its processes is (`ProcessInfo`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from replog.devcluster import tls


@dataclass(frozen=True)
class ClusterSpec:
    controllers: int = 2
    brokers: int = 3
    racks: tuple[str, ...] = ("a", "b", "c")
    gateways: int = 1
    zookeeper_session_timeout_ms: int = 6000
    # 1: one standalone server named `zookeeper`; 3 (or any odd number): an ensemble `zookeeper-1..N`.
    zookeeper_servers: int = 1
    # Log directories per broker: above 1, a broker keeps them in dir-1..N under its data directory (log_dirs).
    broker_log_dirs: int = 1
    # Each ZooKeeper server's maximum heap: every znode lives in it; a server short of heap spends its
    # time collecting and every session it serves times out (docs/perf/controller-million.md).
    zookeeper_heap_mb: int = 512
    # fsync ZooKeeper's transaction log on every write; off for speed, on where power loss is tested.
    zookeeper_force_sync: bool = False
    # Digest authentication and znode ACLs (docs/zookeeper-security.md); False: anonymous sessions, open ACLs.
    zookeeper_auth: bool = True
    # Extra flags per role, e.g. {"broker": ["--replica-lag-time-max-ms", "3000"]}.
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    # RLIMIT_NOFILE (soft and hard) per role, set by `prlimit` as the process starts, e.g. {"broker": 512}:
    # a process without CAP_SYS_RESOURCE cannot raise it again.
    open_files_max: dict[str, int] = field(default_factory=dict)
    # Extra environment for every service process.
    env: dict[str, str] = field(default_factory=dict)
    insecure: bool = False  # plaintext, no certificates (replog-local up --insecure)
    # ZooKeeper serves clients on a TLS port only, each process showing it its certificate (zookeeper.py);
    # a cluster with `insecure` keeps a plaintext ZooKeeper whatever this says.
    zookeeper_tls: bool = True
    # A directory with ca.pem and ca.key to sign this cluster's certificates (else a new CA): the test
    # suite's clusters share one CA, so that one operator certificate calls them all.
    ca_dir: str = field(default_factory=lambda: os.environ.get(tls.CA_DIR_ENV, ""))
    # Each process on a host of its own: a network namespace with its own address on a bridge (hosts.py;
    # replog-local up --hosts). Needs root, iproute2 and nftables.
    hosts: bool = False


@dataclass
class ProcessInfo:
    name: str          # zookeeper (or zookeeper-1..N), controller-1, broker-2, gateway-1
    role: str          # zookeeper | controller | broker | gateway
    instance_id: int
    port: int
    metrics_port: int
    command: list[str]
    pid: int = 0
    rack: str = ""
    host: str = "127.0.0.1"  # the address it listens on and advertises
    namespace: str = ""      # its network namespace in the multi-host layout, "" for the root namespace
    kafka_port: int = 0      # a broker's Kafka listener (docs/kafka-compatibility.md); 0 for other roles
    tls: bool = False        # a ZooKeeper server whose client port is a TLS one

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class ClusterError(RuntimeError):
    pass
