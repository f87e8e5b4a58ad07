"""DescribeCluster: live brokers, brokers named in assignments but not registered, the controller."""

from __future__ import annotations

from replog.common.topic_admin.core.model import ClusterView
from replog.common.topic_admin.zk_view import load_view
from replog.gateway.deps import GatewayDeps
from replog.v1 import admin_pb2


def broker_descriptions(view: ClusterView) -> list[admin_pb2.BrokerDescription]:
    out = []
    for broker_id in sorted(view.known_broker_ids()):
        registration = view.brokers.get(broker_id)
        if registration is None:
            out.append(admin_pb2.BrokerDescription(broker_id=broker_id, alive=False))
        else:
            out.append(admin_pb2.BrokerDescription(
                broker_id=broker_id, host=registration.host, port=registration.port,
                rack=registration.rack or "", alive=True, log_dirs=[
                    admin_pb2.LogDirDescription(path=path, offline=path in registration.offline_log_dirs)
                    for path in registration.log_dirs],
            ))
    return out


def describe_cluster(deps: GatewayDeps, request: admin_pb2.DescribeClusterRequest) -> admin_pb2.DescribeClusterResponse:
    view = load_view(deps.connect)
    return admin_pb2.DescribeClusterResponse(
        brokers=broker_descriptions(view), controller_id=view.controller_id, controller_epoch=view.controller_epoch,
    )
