"""Error-code mapping at the edges.

Peer-caused conditions travel as `replog.v1.ErrorCode` values in responses.
Cores mirror these codes as an IntEnum with identical numbers, so an edge maps
by value; this module checks that the two agree and turns admin failures into
gRPC statuses with a message a person can act on.
"""

from __future__ import annotations

import enum

import grpc

from replog.v1 import common_pb2


def error_name(code: int) -> str:
    """'NOT_LEADER' for ErrorCode 2; 'UNKNOWN(99)' for a number not in the contract."""
    try:
        return common_pb2.ErrorCode.Name(code).removeprefix("ERROR_CODE_")
    except ValueError:
        return f"UNKNOWN({code})"


def check_mirror(core_enum: type[enum.IntEnum]) -> None:
    """Assert that a core's ErrorCode enum matches the proto's names and numbers."""
    for member in core_enum:
        proto_name = "ERROR_CODE_" + member.name
        assert common_pb2.ErrorCode.Value(proto_name) == member.value, (
            f"{core_enum.__module__}.{member.name}={member.value} does not match the proto's {proto_name}"
        )


class AdminError(Exception):
    """A refused admin request: carries the gRPC status to answer with."""

    def __init__(self, status: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def invalid_argument(message: str) -> AdminError:
    return AdminError(grpc.StatusCode.INVALID_ARGUMENT, message)


def failed_precondition(message: str) -> AdminError:
    return AdminError(grpc.StatusCode.FAILED_PRECONDITION, message)


def not_found(message: str) -> AdminError:
    return AdminError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> AdminError:
    return AdminError(grpc.StatusCode.ALREADY_EXISTS, message)


def unavailable(message: str) -> AdminError:
    return AdminError(grpc.StatusCode.UNAVAILABLE, message)
