"""Per-topic configuration: parsing and validating ``/config/topics/<topic>``.

Theory of operation
-------------------
ZooKeeper and the admin API carry topic configs as a ``str -> str`` map with
Kafka's key names (``min.insync.replicas``, ``unclean.leader.election.enable``,
...).  :meth:`TopicConfig.from_map` is the one place that map becomes typed
values: an unknown key, a value that does not parse, or a value out of range
raises :class:`~.errors.InvalidConfigError` naming the key, the value and what
was expected.  Keys absent from the map take the defaults below (Kafka's
defaults), and :meth:`TopicConfig.to_map` gives the effective configs back.

The controller reads ``unclean_leader_election`` (may the offline election pick a replica outside the
ISR; docs/architecture.md, "A broker failure") and ``min.insync.replicas`` (for the eligible leader
replicas, docs/durability.md); the other values are carried for the brokers and the admin API.  ``None`` means "the broker's own
default" for the flush settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from .errors import InvalidConfigError
from .timestamp_type import TimestampType

_LONG_MAX = 2**63 - 1
# Whose clock record timestamps are from: the producer's (CreateTime) or the leader's at append
# (LogAppendTime); the brokers read it (replog.common.records.batch says what the leader does).
MESSAGE_TIMESTAMP_TYPE = "message.timestamp.type"
# How many ISR members an acks=all write needs and, below it, the HW stops (strict min ISR); a topic
# without its own value takes its leader's broker default (the controller, for the ELR, the lowest).
MIN_INSYNC_REPLICAS = "min.insync.replicas"
# The codec the topic's batches are stored with: `producer` keeps each batch as its producer
# compressed it; any other value makes the leader compress (or, `uncompressed`, expand) every batch
# whose codec differs (replog.common.records.compression). Kafka's values.
COMPRESSION_TYPE = "compression.type"
COMPRESSION_PRODUCER = "producer"
COMPRESSION_UNCOMPRESSED = "uncompressed"
COMPRESSION_TYPES = (COMPRESSION_PRODUCER, COMPRESSION_UNCOMPRESSED, "gzip", "snappy", "lz4", "zstd")
# What happens to a topic's old records (Kafka's values): `delete` by retention.ms / retention.bytes,
# `compact` by the log cleaner (the latest record of each key is kept, tombstones go after
# delete.retention.ms), `compact,delete` both. The brokers' log package reads it (log/cleaner.py).
CLEANUP_POLICY = "cleanup.policy"
CLEANUP_DELETE = "delete"
CLEANUP_COMPACT = "compact"
CLEANUP_COMPACT_DELETE = "compact,delete"


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """Effective configuration of one topic."""

    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    max_message_bytes: int = 1024 * 1024 + 12
    flush_messages: int | None = None
    flush_ms: int | None = None
    message_timestamp_type: str = TimestampType.CREATE_TIME.value
    compression_type: str = COMPRESSION_PRODUCER
    cleanup_policy: str = CLEANUP_DELETE
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _LONG_MAX
    delete_retention_ms: int = 24 * 3600 * 1000

    @classmethod
    def from_map(cls, configs: Mapping[str, str]) -> TopicConfig:
        """Parse a ``str -> str`` config map; keys not given keep their defaults."""
        values: dict[str, object] = {}
        for key in sorted(configs):
            spec = _SPECS.get(key)
            if spec is None:
                known = ", ".join(sorted(_SPECS))
                raise InvalidConfigError(f"Unknown topic config '{key}'; known configs: {known}.")
            field_name, parse = spec
            values[field_name] = parse(key, configs[key])
        return cls(**values)

    def to_map(self) -> dict[str, str]:
        """Every config key with its effective value, as strings (``flush.*`` only when set)."""
        result: dict[str, str] = {}
        for key, (field_name, _) in _SPECS.items():
            value = getattr(self, field_name)
            if value is None:
                continue
            result[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return result


def parse_value(key: str, text: str) -> object:
    """One config value as its typed value (InvalidConfigError as `TopicConfig.from_map` raises it)."""
    spec = _SPECS.get(key)
    if spec is None:
        return TopicConfig.from_map({key: text})  # raises, naming the known configs
    return spec[1](key, text)


def _integer(minimum: int, maximum: int = _LONG_MAX) -> Callable[[str, str], int]:
    def parse(key: str, text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise InvalidConfigError(
                f"Invalid value '{text}' for topic config '{key}': expected an integer."
            ) from None
        if not minimum <= value <= maximum:
            raise InvalidConfigError(
                f"Invalid value {value} for topic config '{key}': "
                f"must be between {minimum} and {maximum}."
            )
        return value

    return parse


def _one_of(*choices: str) -> Callable[[str, str], str]:
    def parse(key: str, text: str) -> str:
        if text not in choices:
            raise InvalidConfigError(
                f"Invalid value '{text}' for topic config '{key}': expected one of {', '.join(choices)}."
            )
        return text

    return parse


def _ratio(key: str, text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidConfigError(f"Invalid value '{text}' for topic config '{key}': expected a number.") from None
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise InvalidConfigError(f"Invalid value {text} for topic config '{key}': must be between 0 and 1.")
    return value


def _cleanup_policy(key: str, text: str) -> str:
    """`delete`, `compact`, or both in either order (comma-separated); the canonical spelling."""
    parts = [part.strip() for part in text.split(",")]
    if not parts or any(part not in (CLEANUP_DELETE, CLEANUP_COMPACT) for part in parts) or len(set(parts)) != len(parts):
        raise InvalidConfigError(
            f"Invalid value '{text}' for topic config '{key}': expected delete, compact or compact,delete."
        )
    return CLEANUP_COMPACT_DELETE if len(parts) == 2 else parts[0]


def _boolean(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidConfigError(
            f"Invalid value '{text}' for topic config '{key}': expected 'true' or 'false'."
        )
    return lowered == "true"


# config key -> (TopicConfig field, parser).  Ranges follow Kafka's LogConfig.
_SPECS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    MIN_INSYNC_REPLICAS: ("min_insync_replicas", _integer(1, 2**31 - 1)),
    "unclean.leader.election.enable": ("unclean_leader_election", _boolean),
    "retention.ms": ("retention_ms", _integer(-1)),
    "retention.bytes": ("retention_bytes", _integer(-1)),
    "segment.bytes": ("segment_bytes", _integer(14, 2**31 - 1)),
    "segment.ms": ("segment_ms", _integer(1)),
    "max.message.bytes": ("max_message_bytes", _integer(1, 2**31 - 1)),
    "flush.messages": ("flush_messages", _integer(1)),
    "flush.ms": ("flush_ms", _integer(0)),
    MESSAGE_TIMESTAMP_TYPE: ("message_timestamp_type", _one_of(*(t.value for t in TimestampType))),
    COMPRESSION_TYPE: ("compression_type", _one_of(*COMPRESSION_TYPES)),
    CLEANUP_POLICY: ("cleanup_policy", _cleanup_policy),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _integer(0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _integer(1)),
    "delete.retention.ms": ("delete_retention_ms", _integer(0)),
}

assert {name for name, _ in _SPECS.values()} == {f.name for f in fields(TopicConfig)}
