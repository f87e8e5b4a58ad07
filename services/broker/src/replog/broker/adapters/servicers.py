"""gRPC servicers of the broker: BrokerControlService, ReplicationService, LogService.

Placeholder answers until the replica manager is wired in: every call gets a
typed error, never a crash.
"""

from __future__ import annotations

from replog.common.grpc_server import ServiceBinding
from replog.v1 import (
    broker_control_pb2,
    broker_control_pb2_grpc,
    common_pb2,
    log_pb2,
    log_pb2_grpc,
    replication_pb2,
    replication_pb2_grpc,
)

_NOT_READY = common_pb2.ERROR_CODE_REPLICA_NOT_AVAILABLE


class BrokerControlServicer(broker_control_pb2_grpc.BrokerControlServiceServicer):
    def LeaderAndIsr(self, request, context):
        return broker_control_pb2.LeaderAndIsrResponse(error_code=_NOT_READY, error_message="not implemented yet")

    def StopReplica(self, request, context):
        return broker_control_pb2.StopReplicaResponse(error_code=_NOT_READY, error_message="not implemented yet")

    def UpdateMetadata(self, request, context):
        return broker_control_pb2.UpdateMetadataResponse(error_code=_NOT_READY, error_message="not implemented yet")


class ReplicationServicer(replication_pb2_grpc.ReplicationServiceServicer):
    def ReplicaFetch(self, request, context):
        return replication_pb2.ReplicaFetchResponse(error_code=_NOT_READY, error_message="not implemented yet")

    def OffsetForLeaderEpoch(self, request, context):
        return replication_pb2.OffsetForLeaderEpochResponse()


class LogServicer(log_pb2_grpc.LogServiceServicer):
    def Produce(self, request, context):
        return log_pb2.ProduceResponse()

    def Fetch(self, request, context):
        return log_pb2.FetchResponse()

    def ListOffsets(self, request, context):
        return log_pb2.ListOffsetsResponse()

    def Metadata(self, request, context):
        return log_pb2.MetadataResponse(controller_id=-1)

    def InitProducerId(self, request, context):
        return log_pb2.InitProducerIdResponse(error_code=_NOT_READY, error_message="not implemented yet")


def _name(module, service: str) -> str:
    return module.DESCRIPTOR.services_by_name[service].full_name


def bindings(process) -> list[ServiceBinding]:
    return [
        ServiceBinding(_name(broker_control_pb2, "BrokerControlService"),
                       broker_control_pb2_grpc.add_BrokerControlServiceServicer_to_server, BrokerControlServicer()),
        ServiceBinding(_name(replication_pb2, "ReplicationService"),
                       replication_pb2_grpc.add_ReplicationServiceServicer_to_server, ReplicationServicer()),
        ServiceBinding(_name(log_pb2, "LogService"), log_pb2_grpc.add_LogServiceServicer_to_server, LogServicer()),
    ]
