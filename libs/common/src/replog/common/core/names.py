"""Kafka's topic-name rule, the one every service checks a name against (`org.apache.kafka.common.internals.Topic`).

Legal: 1 to 249 characters of ASCII letters, digits, '.', '_' and '-', and not "." or "..". A
name is a directory name on the brokers' disks (`<topic>-<partition>`): the rule keeps every
such directory inside its log directory and within a file system's 255-byte name limit. The
gateway refuses a bad name when a topic is created; brokers and controllers refuse one in any
request (validation.py), so a name that never passed the gateway cannot reach a disk.

Pure; the messages follow Kafka's, so a user sees the same words from every service.
"""

from __future__ import annotations

import re

TOPIC_NAME_LENGTH_MAX = 249
# A file system's longest name (ext4, xfs, tmpfs): a partition directory `<topic>-<partition>` must fit.
FILE_NAME_BYTES_MAX = 255
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(name: str) -> str | None:
    """What is wrong with `name` as a topic name, in Kafka's words, or None when it is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty."
    if len(name) > TOPIC_NAME_LENGTH_MAX:
        return (f"Topic name '{name[:40]}...' is illegal, it is {len(name)} characters long, "
                f"longer than the {TOPIC_NAME_LENGTH_MAX} allowed.")
    if not _LEGAL.fullmatch(name):
        bad = sorted({c for c in name if not _LEGAL.fullmatch(c)})
        shown = ", ".join(repr(c) for c in bad[:10])
        return (f"Topic name {name[:80]!r} is illegal, it contains {shown}; "
                "only ASCII alphanumerics, '.', '_' and '-' are allowed.")
    if name in (".", ".."):
        return f"Topic name '{name}' is illegal, it cannot be '.' or '..'."
    return None


def is_legal_topic_name(name: str) -> bool:
    return len(name) <= TOPIC_NAME_LENGTH_MAX and _LEGAL.fullmatch(name) is not None and name not in (".", "..")


def partition_directory_name_problem(topic: str, partition: int) -> str | None:
    """Why `<topic>-<partition>` cannot be a partition's directory name, or None."""
    problem = topic_name_problem(topic)
    if problem:
        return problem
    if partition < 0:
        return f"partition {partition} of topic '{topic}' is negative"
    if len(topic) + 1 + len(str(partition)) > FILE_NAME_BYTES_MAX:
        return (f"partition {partition} of topic '{topic[:40]}...' would need a directory name longer than "
                f"{FILE_NAME_BYTES_MAX} bytes: a topic this long cannot have this many partitions")
    return None
