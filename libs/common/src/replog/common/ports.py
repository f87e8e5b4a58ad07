"""The default ports of every replog process: the one owner of these numbers.

Each service's `port` and `metrics_port` keys default to its role's pair here, so a process started
without either listens where the docs, the container image, the compose file and the Kubernetes
manifests expect it; docs/configuration.md prints the table (docs/generate.py). Several processes of one
role on one host need their own ports (the local cluster picks free ones). ZooKeeper's are its own
defaults, listed for the firewall and the manifests.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RolePorts:
    grpc: int      # the service's gRPC port (key `port`): clients, peers, health checks
    metrics: int   # Prometheus /metrics over HTTP (key `metrics_port`)


GATEWAY = RolePorts(grpc=9090, metrics=9091)
CONTROLLER = RolePorts(grpc=9190, metrics=9191)
BROKER = RolePorts(grpc=9290, metrics=9291)
BY_ROLE = {"gateway": GATEWAY, "controller": CONTROLLER, "broker": BROKER}
# A broker's Kafka wire-protocol listener (key `kafka_port`): Kafka clients, beside the gRPC port.
BROKER_KAFKA = 9292


@dataclass(frozen=True)
class OtherPort:
    process: str
    port: int
    use: str
    reached_by: str


ZOOKEEPER_CLIENT_PORT = 2181
ZOOKEEPER_QUORUM_PORT = 2888
ZOOKEEPER_ELECTION_PORT = 3888
ZOOKEEPER = (
    OtherPort("ZooKeeper", ZOOKEEPER_CLIENT_PORT, "client connections (clientPort)", "every replog service"),
    OtherPort("ZooKeeper", ZOOKEEPER_QUORUM_PORT, "followers to the leader (server.N=host:2888:3888)",
              "the other ZooKeeper servers"),
    OtherPort("ZooKeeper", ZOOKEEPER_ELECTION_PORT, "leader election", "the other ZooKeeper servers"),
)

# Who opens a connection to each role's gRPC port (for firewall rules; docs/deploy.md).
GRPC_CALLERS = {
    "gateway": "operators (the replog CLI), tools, Spark jobs",
    "controller": "brokers (AlterPartition, ControlledShutdown, LogDirsOffline)",
    "broker": "clients (produce, fetch, metadata), other brokers (replication), controllers, gateways",
}
