"""gRPC AdminService: validates input, reads and writes ZooKeeper through the
schema module, maps refusals to gRPC statuses with a message naming the bad value."""

from __future__ import annotations

import grpc

from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.v1 import admin_pb2, admin_pb2_grpc


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, zk: ZkClient) -> None:
        self._zk = zk

    def DescribeCluster(self, request, context):
        controller_id, controller_epoch = -1, 0
        found = self._zk.get(schema.CONTROLLER)
        if found:
            controller_id = schema.ControllerRecord.decode(found[0]).controller_id
        found = self._zk.get(schema.CONTROLLER_EPOCH)
        if found:
            controller_epoch = schema.decode_controller_epoch(found[0])
        brokers = []
        for child in sorted(self._zk.children(schema.BROKER_IDS), key=int):
            found = self._zk.get(schema.broker_path(int(child)))
            if not found:
                continue
            registration = schema.BrokerRegistration.decode(int(child), found[0])
            brokers.append(admin_pb2.BrokerDescription(
                broker_id=registration.broker_id, host=registration.host, port=registration.port,
                rack=registration.rack or "", alive=True,
            ))
        return admin_pb2.DescribeClusterResponse(
            brokers=brokers, controller_id=controller_id, controller_epoch=controller_epoch
        )

    def ListTopics(self, request, context):
        topics = sorted(self._zk.children(schema.TOPICS))
        if not request.include_deleting:
            deleting = set(self._zk.children(schema.DELETE_TOPICS))
            topics = [t for t in topics if t not in deleting]
        return admin_pb2.ListTopicsResponse(topics=topics)


def _not_yet(name: str):
    def handler(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{name} is not implemented yet")

    return handler


for _method in admin_pb2.DESCRIPTOR.services_by_name["AdminService"].methods:
    if _method.name not in AdminServicer.__dict__:
        setattr(AdminServicer, _method.name, _not_yet(_method.name))
