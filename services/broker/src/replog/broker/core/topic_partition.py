"""`TopicPartition`: the key of everything per partition in the broker core.

A frozen, ordered value so it can key dicts, purgatory watch lists and sort
deterministically in simulations.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
