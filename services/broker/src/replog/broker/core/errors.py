"""Error codes a peer can cause, as values (a broken invariant is an assert instead).

What it owns: `Refusal`, the value a core function returns instead of raising when a peer
(client, follower, controller) asked for something it may not have.

Invariants:
- `ErrorCode` is re-exported from replog.common.error_codes, the one mirror of
  the proto enum (names and numbers identical; a unit test checks it).
- A `Refusal` never carries `NONE`: success is a different type.
- A broken local invariant is never a `Refusal`; it is an `assert`.
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.error_codes import ErrorCode

__all__ = ["ErrorCode", "Refusal"]


@dataclass(frozen=True)
class Refusal:
    """A request refused for a reason the peer caused; the edge sends `code` and `reason`."""

    code: ErrorCode
    reason: str

    def __post_init__(self) -> None:
        assert self.code is not ErrorCode.NONE, "a refusal always names an error"
