"""A refused admin request, as a value the edge turns into a gRPC status.

The core cannot import grpc, so it names the status by its gRPC name; the
servicer maps it to ``grpc.StatusCode`` (``replog.common.errors.AdminError``).
Every message names the bad value, so a person can act on it. A refusal may also name the typed
error code (``ErrorCode``) that says which value was bad, for an edge whose protocol answers per
field rather than by status (the Kafka listener: INVALID_PARTITIONS, INVALID_CONFIG, ...).
"""

from __future__ import annotations

import enum

from replog.common.error_codes import ErrorCode


class Status(enum.Enum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"        # the request itself is wrong
    FAILED_PRECONDITION = "FAILED_PRECONDITION"  # the cluster's state forbids it now
    NOT_FOUND = "NOT_FOUND"                      # the topic it is about does not exist
    ALREADY_EXISTS = "ALREADY_EXISTS"            # the topic to create exists
    ABORTED = "ABORTED"                          # a concurrent writer won; retrying may succeed


class Refusal(Exception):
    def __init__(self, status: Status, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def invalid(message: str, code: ErrorCode | None = None) -> Refusal:
    return Refusal(Status.INVALID_ARGUMENT, message, code)


def precondition(message: str, code: ErrorCode | None = None) -> Refusal:
    return Refusal(Status.FAILED_PRECONDITION, message, code)


def not_found(message: str, code: ErrorCode | None = None) -> Refusal:
    return Refusal(Status.NOT_FOUND, message, code)


def already_exists(message: str, code: ErrorCode | None = None) -> Refusal:
    return Refusal(Status.ALREADY_EXISTS, message, code)


def aborted(message: str) -> Refusal:
    return Refusal(Status.ABORTED, message)
