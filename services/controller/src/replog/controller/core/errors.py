"""Error codes and error types of the controller core.

Theory of operation
-------------------
There are two kinds of error:

* Conditions a peer or client can cause (a stale leader epoch, an unknown broker,
  a bad replica assignment) are *values*: an :class:`ErrorCode` in a reply, or a
  :class:`ControllerError` subclass raised by a validation function.  Each error
  type names the code the gRPC edge maps it to, so a servicer never guesses.
* A broken invariant (an illegal state transition, a plan that would leave an
  empty ISR) is an ``AssertionError`` that stops the process.
  :class:`IllegalStateTransition` is one.

``ErrorCode`` is ``replog.common.error_codes.ErrorCode``, the one mirror of
``replog.v1.ErrorCode`` (name for name, number for number, without the
``ERROR_CODE_`` prefix), so the core needs no generated code.
"""

from __future__ import annotations

from replog.common.error_codes import ErrorCode

__all__ = ["ErrorCode"]


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
