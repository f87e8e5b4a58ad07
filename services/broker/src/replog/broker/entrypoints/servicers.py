"""The broker's gRPC services as bindings for the shared server bootstrap."""

from __future__ import annotations

from replog.broker.entrypoints.control_servicer import BrokerControlServicer
from replog.broker.entrypoints.group_servicer import GroupServicer
from replog.broker.entrypoints.log_servicer import LogServicer
from replog.broker.entrypoints.replication_servicer import ReplicationServicer
from replog.common.grpc_server import ServiceBinding
from replog.v1 import (
    broker_control_pb2,
    broker_control_pb2_grpc,
    group_pb2,
    group_pb2_grpc,
    log_pb2,
    log_pb2_grpc,
    replication_pb2,
    replication_pb2_grpc,
)


def _name(module, service: str) -> str:
    return module.DESCRIPTOR.services_by_name[service].full_name


def bindings(
    control: BrokerControlServicer, replication: ReplicationServicer, log_service: LogServicer,
    groups: GroupServicer,
) -> list[ServiceBinding]:
    return [
        ServiceBinding(_name(broker_control_pb2, "BrokerControlService"),
                       broker_control_pb2_grpc.add_BrokerControlServiceServicer_to_server, control),
        ServiceBinding(_name(replication_pb2, "ReplicationService"),
                       replication_pb2_grpc.add_ReplicationServiceServicer_to_server, replication),
        ServiceBinding(_name(log_pb2, "LogService"), log_pb2_grpc.add_LogServiceServicer_to_server, log_service),
        ServiceBinding(_name(group_pb2, "GroupService"), group_pb2_grpc.add_GroupServiceServicer_to_server, groups),
    ]
