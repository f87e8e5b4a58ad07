"""The typed error codes of the wire contract, for code that must not import generated code.

What it owns: `ErrorCode`, a mirror of `replog.v1.ErrorCode` in
protos/replog/v1/common.proto with the `ERROR_CODE_` prefix dropped; names and
numbers are identical, so an edge maps a code to the wire by value. The pure
cores (broker, controller) use it; `replog.common.errors.check_mirror` and a
unit test keep it in step with the proto. Pure: no imports beyond `enum`.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Typed answer a peer can act on; numbers equal `replog.v1.ErrorCode`."""

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
    FETCH_SESSION_NOT_FOUND = 43
    INVALID_FETCH_SESSION_EPOCH = 44
    PRODUCER_STATE_FULL = 45
