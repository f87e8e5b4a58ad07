"""A local replog cluster as OS processes: ZooKeeper, controllers, brokers, gateways.

Used by `make up/down/status` (through the `replog-local` command) and by the
integration tests' fixtures, so both start clusters the same way.
"""

from replog.devcluster.cluster import LocalCluster
from replog.devcluster.spec import ClusterSpec, ProcessInfo

__all__ = ["ClusterSpec", "LocalCluster", "ProcessInfo"]
