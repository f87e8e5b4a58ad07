"""Error codes and the invariant error of the controller core.

Theory of operation
-------------------
There are two kinds of error:

* Conditions a peer or client can cause (a stale leader epoch, an unknown broker)
  are *values*: an :class:`ErrorCode` in a reply.  Validation shared with the
  gateway (placement, topic configs) raises the typed errors of
  ``replog.common.core.errors``.
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


class IllegalStateTransition(AssertionError):
    """A replica or partition was asked to move between states the tables forbid.

    This is a bug in the controller, never a peer's fault: it derives from
    ``AssertionError`` so nothing catches it by accident.
    """
