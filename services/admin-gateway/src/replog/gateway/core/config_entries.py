"""Each topic config with the value in force and where it comes from (kafka-configs --describe --all).

Pure. A key the topic sets is a topic override. Otherwise the value is the
default of a broker hosting the topic (brokers report their defaults in
DescribeReplicas, since only they know their own settings), or, when no broker
answered, replog's built-in default (`TopicConfig`). A key with neither (a
flush key no broker sets) is left out: nothing is in force for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from replog.common.core.topic_config import TopicConfig
from replog.common.topic_admin.core.topics import known_config_keys

TOPIC_OVERRIDE = "topic_override"
BROKER_DEFAULT = "broker_default"
DEFAULT = "default"


def config_entries(overrides: Mapping[str, str],
                   broker_defaults: Mapping[str, str] | None) -> list[tuple[str, str, str]]:
    """(key, value, source) of every config in force, in key order."""
    built_in = TopicConfig().to_map()
    entries = []
    for key in sorted(known_config_keys()):
        if key in overrides:
            entries.append((key, overrides[key], TOPIC_OVERRIDE))
        elif broker_defaults is not None and key in broker_defaults:
            entries.append((key, broker_defaults[key], BROKER_DEFAULT))
        elif key in built_in:
            entries.append((key, built_in[key], DEFAULT))
    return entries
