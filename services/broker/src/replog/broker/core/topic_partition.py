"""`TopicPartition`: the key of everything per partition in the broker core.

A frozen, ordered value so it can key dicts, purgatory watch lists and sort
deterministically in simulations. A named tuple rather than a frozen dataclass:
it is hashed a dozen times per partition in every replica fetch, and a tuple
hashes and compares in C, where a dataclass runs a Python `__hash__` each time
(docs/perf/topic-partition-tuple.md).
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
