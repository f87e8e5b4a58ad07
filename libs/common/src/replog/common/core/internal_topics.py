"""The topics replog keeps for itself, and the one rule about them: clients do not write to them.

`__consumer_offsets` holds the consumer groups' committed offsets and membership snapshots (written
only by the group coordinator in the broker). Clients may read an internal topic, but a produce to it
is refused with INVALID_TOPIC, and listings leave it out unless asked, as Kafka does.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC})


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS
