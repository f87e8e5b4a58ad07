"""A refused admin request, as a value the edge turns into a gRPC status.

The core cannot import grpc, so it names the status by its gRPC name; the
servicer maps it to ``grpc.StatusCode`` (``replog.common.errors.AdminError``).
Every message names the bad value, so a person can act on it.
"""

from __future__ import annotations

import enum


class Status(enum.Enum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"        # the request itself is wrong
    FAILED_PRECONDITION = "FAILED_PRECONDITION"  # the cluster's state forbids it now
    NOT_FOUND = "NOT_FOUND"                      # the topic it is about does not exist
    ALREADY_EXISTS = "ALREADY_EXISTS"            # the topic to create exists
    ABORTED = "ABORTED"                          # a concurrent writer won; retrying may succeed


class Refusal(Exception):
    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def invalid(message: str) -> Refusal:
    return Refusal(Status.INVALID_ARGUMENT, message)


def precondition(message: str) -> Refusal:
    return Refusal(Status.FAILED_PRECONDITION, message)


def not_found(message: str) -> Refusal:
    return Refusal(Status.NOT_FOUND, message)


def already_exists(message: str) -> Refusal:
    return Refusal(Status.ALREADY_EXISTS, message)


def aborted(message: str) -> Refusal:
    return Refusal(Status.ABORTED, message)
