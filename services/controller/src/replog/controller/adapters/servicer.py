"""gRPC ControllerService: converts protobuf to events for the controller loop.

A standby answers every call with NOT_CONTROLLER so a broker retries against
the active controller named in /controller.
"""

from __future__ import annotations

from replog.v1 import common_pb2, controller_pb2, controller_pb2_grpc

NOT_CONTROLLER = common_pb2.ERROR_CODE_NOT_CONTROLLER


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, process) -> None:
        self._process = process

    def _refusal(self) -> tuple[int, str]:
        if not self._process.active:
            return NOT_CONTROLLER, f"controller {self._process.config.controller_id} is a standby"
        return common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR, "not implemented yet"

    def AlterPartition(self, request, context):
        code, message = self._refusal()
        return controller_pb2.AlterPartitionResponse(error_code=code, error_message=message)

    def ControlledShutdown(self, request, context):
        code, message = self._refusal()
        return controller_pb2.ControlledShutdownResponse(error_code=code, error_message=message)
