"""Requests a caller can fix: the typed errors that validation raises in any service's core.

A condition a client or peer can cause (a bad replica assignment, an unknown
config key, a partition count that is not an increase) is a `RequestError`
subclass raised by a validation function. Each type names the `ErrorCode` the
gRPC edge answers with, so a servicer never guesses; the message says what to
change. A broken invariant is never one of these: it is an `AssertionError`.
"""

from __future__ import annotations

from replog.common.error_codes import ErrorCode


class RequestError(Exception):
    """A request the caller can fix; `code` is the typed answer at the edge."""

    code: ErrorCode = ErrorCode.INVALID_REQUEST


class InvalidRequestError(RequestError):
    """The request is malformed in a way the message explains."""

    code = ErrorCode.INVALID_REQUEST


class InvalidPartitionsError(RequestError):
    """Partition count zero, negative, or not an increase."""

    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(RequestError):
    """Replication factor zero, negative, or above the number of brokers."""

    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(RequestError):
    """An explicit assignment has duplicates, gaps or uneven replication factors."""

    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class BrokerNotAvailableError(RequestError):
    """An assignment names a broker that is not registered."""

    code = ErrorCode.BROKER_NOT_AVAILABLE


class InvalidConfigError(RequestError):
    """A topic config key is unknown or its value does not parse or is out of range."""

    code = ErrorCode.INVALID_CONFIG
