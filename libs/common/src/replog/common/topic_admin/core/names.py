"""Topic names at the gateway and the Kafka listener: Kafka's rule (replog.common.core.names, which every service checks),
and the collisions Kafka also refuses.

Two names that differ only by '.' versus '_' collide in metric names, so Kafka refuses the
second; so do we.
"""

from __future__ import annotations

from replog.common.core.names import TOPIC_NAME_LENGTH_MAX, topic_name_problem

from replog.common.error_codes import ErrorCode

from .refusal import invalid

__all__ = ["TOPIC_NAME_LENGTH_MAX", "check_topic_name", "collision_key"]


def check_topic_name(name: str) -> None:
    problem = topic_name_problem(name)
    if problem:
        raise invalid(problem, ErrorCode.INVALID_TOPIC)


def collision_key(name: str) -> str:
    """Names equal under this key collide ('a.b' and 'a_b')."""
    return name.replace(".", "_")
