"""A local replog cluster as OS processes: ZooKeeper, controllers, brokers, gateways.

Used by `make up/down/status` (through the `replog-local` command) and by the
integration tests' fixtures, so both start clusters the same way.
"""

from replog.devcluster.cluster import ClusterSpec, LocalCluster, ProcessInfo

__all__ = ["ClusterSpec", "LocalCluster", "ProcessInfo"]
