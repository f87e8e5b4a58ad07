"""Error codes and error types of the controller core.

Theory of operation
-------------------
STYLE §6 separates two kinds of error:

* Conditions a peer or client can cause (a stale leader epoch, an unknown broker,
  a bad replica assignment) are *values*: an :class:`ErrorCode` in a reply, or a
  :class:`ControllerError` subclass raised by a validation function.  Each error
  type names the code the gRPC edge maps it to, so a servicer never guesses.
* A broken invariant (an illegal state transition, a plan that would leave an
  empty ISR) is an ``AssertionError`` that stops the process.
  :class:`IllegalStateTransition` is one.

``ErrorCode`` mirrors ``replog.v1.ErrorCode`` in ``protos/replog/v1/common.proto``
name for name and number for number (without the ``ERROR_CODE_`` prefix), so the
core needs no generated code; a unit test keeps the two in step.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Mirror of ``replog.v1.ErrorCode``; values are the proto numbers."""

    NONE = 0
    UNKNOWN_SERVER_ERROR = 1
    NOT_LEADER = 2
    FENCED_LEADER_EPOCH = 3
    UNKNOWN_LEADER_EPOCH = 4
    STALE_CONTROLLER_EPOCH = 5
    NOT_CONTROLLER = 6
    NOT_ENOUGH_REPLICAS = 7
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 8
    REQUEST_TIMED_OUT = 9
    OFFSET_OUT_OF_RANGE = 10
    UNKNOWN_TOPIC_OR_PARTITION = 11
    CORRUPT_RECORD = 12
    RECORD_TOO_LARGE = 13
    INVALID_REQUEST = 14
    INVALID_REQUIRED_ACKS = 15
    OUT_OF_ORDER_SEQUENCE_NUMBER = 16
    DUPLICATE_SEQUENCE_NUMBER = 17
    INVALID_PRODUCER_EPOCH = 18
    UNKNOWN_PRODUCER_ID = 19
    REPLICA_NOT_AVAILABLE = 20
    LEADER_NOT_AVAILABLE = 21
    BROKER_NOT_AVAILABLE = 22
    INVALID_UPDATE_VERSION = 23
    INELIGIBLE_REPLICA = 24
    TOPIC_ALREADY_EXISTS = 25
    INVALID_TOPIC = 26
    INVALID_PARTITIONS = 27
    INVALID_REPLICATION_FACTOR = 28
    INVALID_REPLICA_ASSIGNMENT = 29
    INVALID_CONFIG = 30
    NO_REASSIGNMENT_IN_PROGRESS = 31
    REASSIGNMENT_IN_PROGRESS = 32
    PREFERRED_LEADER_NOT_AVAILABLE = 33
    ELECTION_NOT_NEEDED = 34
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 35
    TOPIC_DELETION_IN_PROGRESS = 36
    STORAGE_ERROR = 37
    OPERATION_NOT_ATTEMPTED = 38
    BROKER_SHUTTING_DOWN = 39
    METADATA_STORE_UNAVAILABLE = 40
    STALE_BROKER_EPOCH = 41
    NOT_ASSIGNED_REPLICA = 42


class ControllerError(Exception):
    """A request the caller can fix; ``code`` is the typed answer at the edge."""

    code: ErrorCode = ErrorCode.INVALID_REQUEST


class InvalidRequestError(ControllerError):
    """The request is malformed in a way the message explains."""

    code = ErrorCode.INVALID_REQUEST


class InvalidPartitionsError(ControllerError):
    """Partition count zero, negative, or not an increase."""

    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(ControllerError):
    """Replication factor zero, negative, or above the number of brokers."""

    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(ControllerError):
    """An explicit assignment has duplicates, gaps or uneven replication factors."""

    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class BrokerNotAvailableError(ControllerError):
    """An assignment names a broker that is not registered."""

    code = ErrorCode.BROKER_NOT_AVAILABLE


class InvalidConfigError(ControllerError):
    """A topic config key is unknown or its value does not parse or is out of range."""

    code = ErrorCode.INVALID_CONFIG


class IllegalStateTransition(AssertionError):
    """A replica or partition was asked to move between states the tables forbid.

    This is a bug in the controller, never a peer's fault: it derives from
    ``AssertionError`` so nothing catches it by accident.
    """
