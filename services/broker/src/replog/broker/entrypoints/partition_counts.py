"""How many partitions each broker request names, for the bound on partitions per request.

The bound (`request_partitions_max`, config.py) is checked by `replog.common.request_bounds`
before a handler runs; this table says which methods it covers and how each request is
counted. The controller's requests are counted whole: it sends one request of each kind per
broker and does not split them, so an INIT LeaderAndIsr lists every replica the broker hosts
and a full UpdateMetadata every partition of the cluster (controller
adapters/broker_requests.py); the bound must be above the cluster's partition count.
"""

from __future__ import annotations

from typing import Mapping

from replog.common.request_bounds import Counter

_CONTROL = "/replog.v1.BrokerControlService/"
_REPLICATION = "/replog.v1.ReplicationService/"
_LOG = "/replog.v1.LogService/"

PARTITION_COUNTS: Mapping[str, Counter] = {
    _CONTROL + "LeaderAndIsr": lambda r: len(r.partitions),
    _CONTROL + "StopReplica": lambda r: len(r.partitions),
    _CONTROL + "UpdateMetadata": lambda r: len(r.partitions),
    _REPLICATION + "ReplicaFetch": lambda r: len(r.partitions),
    _REPLICATION + "ReplicaFetchStream": lambda r: len(r.fetch.partitions),
    _REPLICATION + "OffsetForLeaderEpoch": lambda r: len(r.partitions),
    _LOG + "Produce": lambda r: len(r.partitions),
    _LOG + "ProduceStream": lambda r: len(r.produce.partitions),
    _LOG + "Fetch": lambda r: len(r.partitions),
    _LOG + "ListOffsets": lambda r: len(r.partitions),
    _LOG + "OffsetsForLeaderEpochs": lambda r: len(r.partitions),
    _LOG + "DescribeReplicas": lambda r: len(r.partitions),
    _LOG + "AdvanceLogStartOffset": lambda r: len(r.partitions),
}
