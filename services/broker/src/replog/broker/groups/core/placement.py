"""Which partition of the offsets topic (internal_topics.py) holds a group, and the group id's naming rule.

The partition is CRC-32 of the group id's UTF-8 bytes modulo the partition count: stable across
processes and versions (Python's `hash` of a string is salted per process, so it cannot be used),
and the same on every broker and client. The count must never change once the topic exists, or
groups would move away from their stored state; the coordinator reads it from the topic itself.
"""

from __future__ import annotations

import re
import zlib

GROUP_ID_LENGTH_MAX = 249
_GROUP_ID = re.compile(r"[a-zA-Z0-9._-]+")


def offsets_partition(group_id: str, partitions: int) -> int:
    assert partitions > 0, "the offsets topic has at least one partition"
    return zlib.crc32(group_id.encode()) % partitions


def group_id_problem(group_id: str) -> str | None:
    """What is wrong with a group id, in words a person can act on, or None."""
    if not group_id:
        return "the group id is empty"
    if len(group_id) > GROUP_ID_LENGTH_MAX:
        return f"group id {group_id[:40]!r}... is longer than {GROUP_ID_LENGTH_MAX} characters"
    if not _GROUP_ID.fullmatch(group_id):
        return f"group id {group_id!r} may only hold ASCII letters, digits, '.', '_' and '-'"
    if group_id in (".", ".."):
        return f"{group_id!r} cannot be a group id"
    return None
