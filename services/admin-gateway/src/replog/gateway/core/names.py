"""Kafka's topic-name rules (``org.apache.kafka.common.internals.Topic``).

Legal: 1 to 249 characters of ASCII letters, digits, '.', '_' and '-', and not
"." or ".." (they are directory names on the brokers' disks). Two names that
differ only by '.' versus '_' collide in metric names, so Kafka refuses the
second; so do we.
"""

from __future__ import annotations

import re

from .refusal import invalid

TOPIC_NAME_LENGTH_MAX = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def check_topic_name(name: str) -> None:
    if not name:
        raise invalid("Topic name is illegal, it can't be empty.")
    if name in (".", ".."):
        raise invalid(f"Topic name '{name}' is illegal, it cannot be '.' or '..'.")
    if len(name) > TOPIC_NAME_LENGTH_MAX:
        raise invalid(
            f"Topic name '{name[:40]}...' is illegal, it is {len(name)} characters long, "
            f"longer than the {TOPIC_NAME_LENGTH_MAX} allowed."
        )
    if not _LEGAL.fullmatch(name):
        bad = sorted({c for c in name if not _LEGAL.fullmatch(c)})
        raise invalid(
            f"Topic name '{name}' is illegal, it contains {', '.join(repr(c) for c in bad)}; "
            "only ASCII alphanumerics, '.', '_' and '-' are allowed."
        )


def collision_key(name: str) -> str:
    """Names equal under this key collide ('a.b' and 'a_b')."""
    return name.replace(".", "_")
