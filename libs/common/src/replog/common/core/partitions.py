"""The names every service gives a partition: `TopicPartition` and `NO_LEADER`.

`TopicPartition` keys everything per partition in the controller and the broker.
It is a named tuple, not a frozen dataclass: a tuple hashes and compares in C,
and the broker hashes it a dozen times per partition in every replica fetch
(docs/perf/topic-partition-tuple.md).
"""

from __future__ import annotations

from typing import NamedTuple

NO_LEADER = -1
"""Leader id of a partition that has no leader (offline), as in Kafka."""


class TopicPartition(NamedTuple):
    """One partition of one topic; hashable and ordered by (topic, partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
