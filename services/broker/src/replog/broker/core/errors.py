"""Error codes a peer can cause, as values (STYLE rule 6).

What it owns: `ErrorCode`, a mirror of `replog.v1.ErrorCode` in
protos/replog/v1/common.proto with the `ERROR_CODE_` prefix dropped, and
`Refusal`, the value a core function returns instead of raising when a peer
(client, follower, controller) asked for something it may not have.

Invariants:
- Names and numbers are identical to the proto enum, so the edge maps a core
  code to the wire by value (`ErrorCode.NOT_LEADER.value == 2`); a unit test
  parses common.proto and checks the mirror.
- A `Refusal` never carries `NONE`: success is a different type.
- A broken local invariant is never a `Refusal`; it is an `assert`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


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


@dataclass(frozen=True)
class Refusal:
    """A request refused for a reason the peer caused; the edge sends `code` and `reason`."""

    code: ErrorCode
    reason: str

    def __post_init__(self) -> None:
        assert self.code is not ErrorCode.NONE, "a refusal always names an error"
